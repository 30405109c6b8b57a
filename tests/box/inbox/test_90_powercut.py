"""Power loss: the host kills the VM mid-recording and mid-job, then boots
the same disks again. boxd must come up, the recording must play up to its
last fragment, and the job from before must be reported, not running and
not silently gone. Runs last: check_* here pulls the plug."""
import json
import os
import subprocess
import time

import boxtest
from boxtest import api, emit, health, unit

PHASE = "/work/.boxtest-phase"  # the driver runs reboot_check_* when it exists


def durable_write(path, text):
    with open(path, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(os.path.dirname(path), os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def check_cut_power_mid_recording_and_job():
    recording = api("POST", "/v1/screen/record/start", {"fps": 10})
    job = api("POST", "/v1/exec", {"cmd": "echo job-started; sleep 3000", "background": True})
    # Several 1 s fragments; the input keeps the screen changing.
    for i in range(8):
        api("POST", "/v1/screen/input", {"actions": [{"type": "type", "text": str(i)}]})
        time.sleep(1)
    so_far = api("GET", "/v1/screen/record")
    state = {"recording": recording["path"], "bgId": job["bgId"], "bootId": health()["bootId"],
             "bytesBefore": os.path.getsize(recording["path"]), "msBefore": so_far["durationMs"]}
    # Only the marker is made durable; boxd's own files are as boxd left them.
    durable_write(PHASE, json.dumps(state))
    boxtest.powercut_requested = True
    return (f"recording {state['msBefore'] / 1000:.1f} s, {state['bytesBefore']} bytes so far, "
            f"job {job['bgId']} running")


def state():
    with open(PHASE) as f:
        return json.load(f)


def reboot_check_boxd_up_again():
    u = unit("boxd.service", "ActiveState", "NRestarts")
    h = health()
    assert u["ActiveState"] == "active" and u["NRestarts"] == "0", u
    assert h["ok"] and h["bootId"] != state()["bootId"], h
    return f"new boot {h['bootId'][:8]}, boxd active"


def reboot_check_recording_plays_to_last_fragment():
    s = state()
    path = s["recording"]
    assert os.path.exists(path), f"{path} is gone after the power cut"
    size = os.path.getsize(path)
    emit(f"recording after the power cut: {size} bytes (it had {s['bytesBefore']} before)")
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration",
                            "-of", "json", path], capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, f"ffprobe: {probe.stderr.strip()[-300:]} ({size} bytes)"
    duration = float(json.loads(probe.stdout)["format"].get("duration", 0))
    decode = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "null", "-"],
                            capture_output=True, text=True, timeout=120)
    assert decode.returncode == 0, decode.stderr[-300:]
    # The contract: playable up to its last second. Fragments are a second
    # long, so what had been recorded when the marker was written, less 2 s.
    recorded = s["msBefore"] / 1000
    assert duration >= recorded - 2, f"only {duration:.1f} of {recorded:.1f} s play ({size} bytes)"
    return f"{duration:.1f} s play of {recorded:.1f} s recorded before the cut, {size} bytes"


def reboot_check_job_reported_lost():
    bg = state()["bgId"]
    procs = api("GET", "/v1/procs")["procs"]
    mine = [p for p in procs if p["bgId"] == bg]
    emit(f"procs after the power cut: {json.dumps(procs)[:600]}")
    if not mine:
        status, _, body = boxtest.request("GET", f"/v1/procs/{bg}")
        logs = [f for f in os.listdir("/work/.sbx/logs") if f.startswith(bg)]
        raise AssertionError(f"job {bg} is silently gone: /v1/procs lists {len(procs)} procs, "
                             f"GET /v1/procs/{bg} answers {status} {body[:120]!r}, its log {logs} is kept")
    p = mine[0]
    assert p["state"] != "running", f"job {bg} still reported running after the power cut: {p}"
    return f"state {p['state']}, exitCode {p.get('exitCode')}, signal {p.get('signal')}"
