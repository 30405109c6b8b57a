"""/work full (ENOSPC): boxd keeps answering, background commands can be
listed and stopped, nothing crashes, and all works again once space frees.
/work is a 512 MiB disk of its own (see tests/box/image/fstab)."""
import os
import subprocess

from boxtest import api, emit, health, run, unit, wait_until

FILL = "/work/boxtest-fill"


def free_bytes():
    st = os.statvfs("/work")
    return st.f_bfree * st.f_frsize  # root's view: reserved blocks included


def check_work_full_then_freed():
    before = unit("boxd.service", "MainPID", "NRestarts")
    # A command that keeps writing output while the disk fills.
    bg = api("POST", "/v1/exec", {"cmd": "while :; do echo still writing; sleep 0.2; done",
                                  "background": True})
    # Most of it at once, the rest by plain writes until ENOSPC.
    subprocess.run(["fallocate", "-l", str(free_bytes() - (16 << 20)), FILL], check=True)
    subprocess.run(f"cat /dev/zero >> {FILL}", shell=True, capture_output=True)
    try:
        return while_full(bg, before)
    finally:
        for path in (FILL, "/work/boxtest-probe"):
            if os.path.exists(path):
                os.unlink(path)


def while_full(bg, before):
    # ext4 keeps a few clusters back even from root (f_bfree counts them);
    # what matters is that writes fail.
    try:
        with open("/work/boxtest-probe", "w") as f:
            f.write("x" * 65536)
            f.flush()
            os.fsync(f.fileno())
        raise AssertionError(f"a write to /work succeeded: the disk is not full ({free_bytes()} free)")
    except OSError as error:
        assert error.errno == 28, error  # ENOSPC

    h = health()
    assert h["ok"] and h["disk"]["freeBytes"] < 1 << 20, h["disk"]
    procs = api("GET", "/v1/procs")["procs"]
    mine = [p for p in procs if p["bgId"] == bg["bgId"]]
    assert mine and mine[0]["state"] == "running", procs
    # A new command while full: boxd must answer (a result or an error), not die.
    status, body = None, None
    try:
        body = api("POST", "/v1/exec", {"cmd": "echo while-full", "timeoutSec": 30}, expect=None)
    except Exception as error:  # noqa: BLE001 - reported below
        body = f"{type(error).__name__}: {error}"
    emit(f"exec while /work is full answered: {str(body)[:300]}")
    stopped = api("POST", f"/v1/procs/{bg['bgId']}/stop", {"graceSec": 2})
    assert stopped["state"] == "exited", stopped

    os.unlink(FILL)
    r = run("echo after-freeing", timeout=30)
    assert r["exitCode"] == 0 and r["stdout"] == "after-freeing\n", r
    # health samples the disk at most once a second (boxd/services/health.c).
    wait_until("health sees the freed space", lambda: health()["disk"]["freeBytes"] > 100 << 20, 5, 0.3)
    after = unit("boxd.service", "MainPID", "NRestarts")
    assert after == before, f"boxd restarted: {before} -> {after}"
    exec_note = body.get("exitCode", body.get("error")) if isinstance(body, dict) else body
    return f"health, procs and stop worked while full; exec while full: {str(exec_note)[:120]}"
