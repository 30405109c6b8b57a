"""The shipped /etc/boxd/boxd.conf (packaging/boxd.conf) parses as it is, and
with every commented-out setting switched on, so its names and example
values stay in step with boxd's flags."""
import os
import re
import subprocess

from conftest import BOXD

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "packaging", "boxd.conf")


def parses(path):
    return subprocess.run([BOXD, "--config", path, "--version"], capture_output=True, text=True, timeout=30)


def test_shipped_config_parses():
    result = parses(CONFIG)
    assert result.returncode == 0, result.stderr


def test_every_documented_setting_parses(tmp_path):
    with open(CONFIG) as f:
        text = f.read()
    settings = re.findall(r"^#([a-z-]+ = .*)$", text, re.M)
    assert len(settings) >= 10, "the config documents too few settings"
    enabled = tmp_path / "boxd.conf"
    enabled.write_text("\n".join(settings) + "\n")
    result = parses(str(enabled))
    assert result.returncode == 0, result.stderr


def test_bad_setting_is_named(tmp_path):
    bad = tmp_path / "boxd.conf"
    bad.write_text("# fine\nwork-dir = /tmp\nno-such-setting = 1\n")
    result = parses(str(bad))
    assert result.returncode == 2
    assert ":3:" in result.stderr and "no-such-setting" in result.stderr
