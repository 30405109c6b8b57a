"""boxd killed and starved under systemd: a SIGKILL mid-call and a full /run.

systemd brings a killed boxd back (Restart=always, RestartSec=1s); the new
boxd adopts the running commands, and a retried call with the same
X-Request-Id gets the first call's result instead of running it again. /run
is RAM (tmpfs) in a box and holds boxd's run dir: full, boxd keeps answering,
starts, and recovers when space frees."""
import json
import os
import re
import signal
import subprocess
import threading
import time

from boxtest import (api, boxd_main_pid, emit, figure, health, request, run, serving_again,
                     unit, wait_until)

RUNS = "/work/boxtest-crash-runs"
RUN_FILL = "/run/boxtest-fill"


def call_in_thread(body, request_id):
    """Starts a foreground exec carrying `request_id`; its answer (or the
    error of a connection cut by the kill) lands in the returned dict."""
    outcome = {}

    def call():
        try:
            outcome["answer"] = request("POST", "/v1/exec", body, timeout=60,
                                        headers={"X-Request-Id": request_id})
        except Exception as error:  # noqa: BLE001 - the kill cuts it
            outcome["error"] = f"{type(error).__name__}: {error}"

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread, outcome


def log_numbers(bg_id):
    status, _, data = request("GET", f"/v1/procs/{bg_id}/log")
    assert status == 200, (status, data[:200])
    return [int(n) for n in re.findall(rb"^line (\d+)$", data, re.M)]


def check_sigkill_mid_call():
    before = int(unit("boxd.service", "NRestarts")["NRestarts"])
    if os.path.exists(RUNS):
        os.unlink(RUNS)
    bg = api("POST", "/v1/exec", {"cmd": "i=0; while :; do i=$((i+1)); echo line $i; sleep 0.1; done",
                                  "background": True})
    body = {"cmd": f"echo run >> {RUNS}; sleep 4; echo finished", "timeoutSec": 60}
    thread, first = call_in_thread(body, "boxtest-crash-1")
    wait_until("the command started", lambda: os.path.exists(RUNS), 20, 0.1)

    old_pid = boxd_main_pid()
    killed_at = time.monotonic()
    os.kill(old_pid, signal.SIGKILL)
    wait_until("boxd serving again after SIGKILL", lambda: serving_again(old_pid), 60, 0.05)
    back_ms = (time.monotonic() - killed_at) * 1000
    figure("sigkill-to-health-ms", f"{back_ms:.0f}")
    thread.join(30)

    status, _, data = request("POST", "/v1/exec", body, timeout=60,
                              headers={"X-Request-Id": "boxtest-crash-1"})
    assert status == 200, (status, data[:300])
    result = json.loads(data)
    assert result["exitCode"] == 0 and result["stdout"] == "finished\n", result
    with open(RUNS) as f:
        runs = f.read().count("run")
    assert runs == 1, f"the command ran {runs} times for one X-Request-Id"

    procs = {p["bgId"]: p for p in api("GET", "/v1/procs")["procs"]}
    assert procs.get(bg["bgId"], {}).get("state") == "running", procs.get(bg["bgId"])
    time.sleep(0.5)
    numbers = log_numbers(bg["bgId"])
    assert numbers == list(range(1, len(numbers) + 1)), f"log lines lost or repeated: {numbers[-20:]}"
    api("POST", f"/v1/procs/{bg['bgId']}/stop", {"graceSec": 2})

    after = int(unit("boxd.service", "NRestarts")["NRestarts"])
    assert after == before + 1, f"NRestarts {before} -> {after}"
    os.unlink(RUNS)
    return (f"back in {back_ms:.0f} ms; the retry got the first run's result (1 run); "
            f"the job kept logging ({len(numbers)} lines, none lost); first call: "
            f"{'cut' if 'error' in first else first['answer'][0]}")


def run_free_bytes():
    st = os.statvfs("/run")
    return st.f_bavail * st.f_frsize


def fill_run():
    subprocess.run(["fallocate", "-l", str(max(run_free_bytes() - (1 << 20), 0)), RUN_FILL], check=True)
    subprocess.run(f"cat /dev/zero >> {RUN_FILL}", shell=True, capture_output=True)
    try:
        with open("/run/boxtest-probe", "w") as f:
            f.write("x" * 65536)
        raise AssertionError(f"a write to /run succeeded: not full ({run_free_bytes()} free)")
    except OSError as error:
        assert error.errno == 28, error  # ENOSPC
    finally:
        if os.path.exists("/run/boxtest-probe"):
            os.unlink("/run/boxtest-probe")


def check_run_full_then_freed():
    """A full /run: boxd answers, even a fresh start of it comes up, and all
    works again once space frees."""
    bg = api("POST", "/v1/exec", {"cmd": "sleep 600", "background": True})
    fill_run()
    try:
        # health samples the disks at most once a second (boxd/services/health.c).
        wait_until("health says /run is full",
                   lambda: any(d["full"] for d in health()["disks"] if d["path"].startswith("/run")),
                   5, 0.3)
        answered = api("POST", "/v1/exec", {"cmd": "echo while-full", "timeoutSec": 30}, expect=None)
        emit(f"exec while /run is full answered: {str(answered)[:300]}")
        listed = [p for p in api("GET", "/v1/procs")["procs"] if p["bgId"] == bg["bgId"]]
        assert listed and listed[0]["state"] == "running", listed

        old_pid = boxd_main_pid()
        restarted_at = time.monotonic()
        subprocess.run(["systemctl", "restart", "boxd"], check=True, timeout=60)
        wait_until("boxd started with /run full", lambda: serving_again(old_pid), 60, 0.1)
        figure("restart-with-run-full-ms", f"{(time.monotonic() - restarted_at) * 1000:.0f}")
        listed = [p for p in api("GET", "/v1/procs")["procs"] if p["bgId"] == bg["bgId"]]
        assert listed and listed[0]["state"] == "running", f"the job was lost: {listed}"
    finally:
        os.unlink(RUN_FILL)
    r = run("echo after-freeing", timeout=30)
    assert r["exitCode"] == 0 and r["stdout"] == "after-freeing\n", r
    stopped = api("POST", f"/v1/procs/{bg['bgId']}/stop", {"graceSec": 2})
    assert stopped["state"] == "exited", stopped
    wait_until("health sees /run freed",
               lambda: not any(d["full"] for d in health()["disks"] if d["path"].startswith("/run")),
               5, 0.3)
    assert unit("boxd.service", "ActiveState")["ActiveState"] == "active"
    return "health said /run full, procs kept, boxd restarted while full, exec worked after"
