"""boxctl: human output, --json, exit statuses, socket selection."""
import json
import subprocess

from conftest import BOXCTL


def test_health_human_and_json(boxd):
    out = boxd.boxctl("health")
    assert out.returncode == 0
    text = out.stdout.decode()
    assert "boxd 0.1.0" in text and "display   :65000 down" in text and "locked    no" in text
    out = boxd.boxctl("--json", "health")
    assert out.returncode == 0 and json.loads(out.stdout)["ok"] is True
    out = boxd.boxctl("health", "--json")
    assert json.loads(out.stdout)["ok"] is True


def test_lock_unlock_and_steps(boxd):
    assert boxd.boxctl("lock", "--note", "taking over").returncode == 0
    assert boxd.call("GET", "/v1/lock")[1]["note"] == "taking over"
    assert boxd.boxctl("unlock").returncode == 0
    out = boxd.boxctl("steps")
    assert out.returncode == 0
    lines = out.stdout.decode().splitlines()
    assert len(lines) == 2 and "lock" in lines[0] and "taking over" in lines[0]


def test_usage_errors_exit_2(boxd):
    assert boxd.boxctl().returncode == 2
    out = boxd.boxctl("frobnicate")
    assert out.returncode == 2 and b"unknown command" in out.stderr
    assert boxd.boxctl("health", "extra").returncode == 2
    assert boxd.boxctl("lock", "--bogus").returncode == 2


def test_no_boxd_is_exit_1_with_a_hint(tmp_path):
    out = subprocess.run([BOXCTL, "--socket", str(tmp_path / "none.sock"), "health"],
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert "is boxd running?" in out.stderr


def test_socket_flag_beats_the_environment(boxd, tmp_path):
    out = subprocess.run([BOXCTL, "--socket", boxd.socket, "health"], capture_output=True,
                         env={"BOXD_SOCKET": str(tmp_path / "wrong.sock")})
    assert out.returncode == 0


def test_help_lists_commands(boxd):
    out = boxd.boxctl("--help")
    assert out.returncode == 0 and b"health" in out.stdout and b"unlock" in out.stdout
