"""Docker in the box: docker.io's daemon, seen by boxd's health, and a
container built offline (FROM scratch, busybox-static) run through boxd."""
import subprocess
import time

from boxtest import health, run, wait_until

BUILD = r"""set -e
d=$(mktemp -d)
cp /bin/busybox "$d/"
printf 'FROM scratch\nCOPY busybox /busybox\nENTRYPOINT ["/busybox"]\n' >"$d/Dockerfile"
docker build -q -t boxtest-busybox "$d"
docker run --rm --network none boxtest-busybox echo from-a-container
"""


def check_docker_up_in_health():
    start = time.monotonic()
    wait_until("health docker.up", lambda: health()["docker"]["up"], 120, 1)
    active = subprocess.run(["systemctl", "is-active", "docker.service"], capture_output=True, text=True)
    assert active.stdout.strip() == "active", active.stdout
    return f"docker.up after {time.monotonic() - start:.0f} s of waiting"


def check_container_built_offline_runs_through_exec():
    r = run(BUILD, timeout=300)
    assert r["exitCode"] == 0, r
    assert r["stdout"].strip().endswith("from-a-container"), r["stdout"]
    return f"built and ran in {r['durationMs'] / 1000:.1f} s"
