"""Freeze, thaw and snapshot restore (issue 19, docs/init.md): what a control
plane does to a box that sleeps and is cloned, done with QEMU by the host
(tests/box/run). First a pause: QEMU `stop` for longer than boxd's watchdog,
then `cont`. Then a snapshot: `savevm` of the running box, which the host
restores into two new boxes after this boot (and the power-cut one) ended;
in those the driver finds itself inside check_snapshot_saved and runs the
restore_check_* functions (driver.py)."""
import fcntl
import json
import os
import socket
import subprocess
import sys
import threading
import time

import boxtest
from boxtest import (api, ask_host, carry, emit, figure, health, run, start_boxd, stop_boxd, unit,
                     wait_until)

REPORT_PORT = 9997  # the report peer of a second boxd (test_20_vsock uses 9999)
TICKER = "i=0; while :; do i=$((i+1)); echo tick $i; sleep 1; done"
RESEEDED = "crng reseeded due to virtual machine fork"  # drivers/char/random.c
# On CPU 0: each CPU has a generator of its own, drawn from the kernel's.
DRAW = ("import os, sys; os.sched_setaffinity(0, {0}); "
        "sys.stdout.write(os.getrandom(32).hex() + ' ' + open('/dev/urandom', 'rb').read(32).hex())")
RNDRESEEDCRNG = 0x5207  # _IO('R', 0x07), linux/random.h
S = {}  # what a check before the pause or the snapshot leaves for those after it


def clocks():
    return {name: time.clock_gettime(clock) for name, clock in (
        ("monotonic", time.CLOCK_MONOTONIC), ("boottime", time.CLOCK_BOOTTIME),
        ("realtime", time.CLOCK_REALTIME))}


def rtc_seconds():
    """The emulated RTC, which QEMU drives from the host's clock (-rtc clock=host, the default)."""
    with open("/sys/class/rtc/rtc0/since_epoch") as f:
        return int(f.read())


def clocksource():
    with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
        return f.read().strip()


def watchdog_timeouts():
    """How many times systemd has logged boxd's watchdog firing in this boot
    (test_60_cgroups makes it fire once on purpose)."""
    out = subprocess.run(["journalctl", "-b", "-u", "boxd.service", "-o", "cat", "--no-pager"],
                         capture_output=True, text=True, timeout=60).stdout
    return out.count("Watchdog timeout")


def start_ticker(note):
    job = api("POST", "/v1/exec", {"cmd": TICKER, "background": True, "note": note})
    wait_until(f"{job['bgId']} ticking", lambda: last_tick(job) >= 2, 30)
    return job


def last_tick(job):
    """The job's log must hold `tick 1`, `tick 2`, ... each once and in
    order, nothing lost or repeated: returns the last number."""
    try:
        with open(job["logPath"]) as f:
            lines = f.read().split("\n")[:-1]  # whole lines only
    except FileNotFoundError:
        return 0
    ticks = [int(line[5:]) for line in lines if line.startswith("tick ")]
    assert ticks == list(range(1, len(ticks) + 1)), \
        f"{job['bgId']}'s log is not whole: {len(ticks)} ticks, the last {ticks[-5:]}"
    return ticks[-1] if ticks else 0


def still_ticking(job, since):
    state = api("GET", f"/v1/procs/{job['bgId']}")["state"]
    assert state == "running", f"{job['bgId']} is {state}"
    first = last_tick(job)
    assert first >= since, f"{job['bgId']}'s log went back from tick {since} to {first}"
    last = wait_until(f"{job['bgId']} ticking on", lambda: (n := last_tick(job)) >= first + 2 and n, 30)
    return first, last


def sleeping():
    """True while a `sleep 15` runs (the foreground command of the pause check)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read() == b"sleep\x0015\x00":
                    return True
        except OSError:
            pass
    return False


def same_boxd(before):
    now = unit("boxd.service", "MainPID", "NRestarts", "ActiveState")
    assert (now["MainPID"], now["NRestarts"], now["ActiveState"]) == \
        (before["MainPID"], before["NRestarts"], "active"), f"boxd changed: {before} -> {now}"
    return now


# ---- a pause: QEMU stop, longer than the watchdog, then cont ----

def check_pause_longer_than_the_watchdog():
    u = unit("boxd.service", "MainPID", "NRestarts", "ActiveState", "WatchdogUSec")
    watchdog = int(u["WatchdogUSec"].rstrip("s"))  # "30s"
    pause = watchdog + 10
    job = start_ticker("ticks across a pause")
    fg = {}

    def foreground():
        # 15 s of work with a 25 s timeout, which the pause would pass if it counted.
        try:
            fg["result"] = run("sleep 15; echo slept", timeout=25)
        except Exception as error:  # reported by check_pause_foreground_command
            fg["error"] = error
    thread = threading.Thread(target=foreground, daemon=True)
    thread.start()
    wait_until("the foreground command running", sleeping, 60)
    timeouts = watchdog_timeouts()
    before, rtc_before = clocks(), rtc_seconds()
    answer, seen = ask_host(f"BOXTEST-PAUSE {pause}", timeout=120)
    after, rtc_after = clocks(), rtc_seconds()
    assert answer["event"] == "resumed", answer
    stopped = (answer["contMs"] - answer["stoppedMs"]) / 1000
    moved = {name: after[name] - before[name] for name in after}
    behind = answer["contMs"] / 1000 - after["realtime"]
    S["pause"] = {"unit": u, "job": job, "ticks": last_tick(job), "thread": thread, "fg": fg,
                  "spanned": thread.is_alive(), "stopped": stopped, "answer": answer, "seen": seen,
                  "timeouts": timeouts}
    figure("pause-host-s", f"{stopped:.1f}")
    for name, value in moved.items():
        figure(f"pause-box-{name}-s", f"{value:.1f}")
    figure("pause-box-rtc-s", rtc_after - rtc_before)
    detail = (f"the host stopped the box for {stopped:.1f} s (watchdog {watchdog} s); across it "
              f"CLOCK_MONOTONIC moved {moved['monotonic']:.1f} s, CLOCK_BOOTTIME "
              f"{moved['boottime']:.1f} s, CLOCK_REALTIME {moved['realtime']:.1f} s (then "
              f"{behind:.1f} s behind the host), the RTC {rtc_after - rtc_before} s; clocksource "
              f"{clocksource()}")
    emit(detail)
    assert stopped >= pause - 1, f"the host stopped the box for only {stopped:.1f} s"
    # What docs/init.md says: the box's clocks do not count a QEMU stop.
    assert moved["monotonic"] < watchdog and moved["boottime"] < watchdog, detail
    return detail


def check_pause_left_the_watchdog_quiet():
    p = S["pause"]
    same_boxd(p["unit"])
    assert watchdog_timeouts() == p["timeouts"], "systemd logged a watchdog timeout"
    first = unit("boxd.service", "WatchdogTimestampMonotonic")["WatchdogTimestampMonotonic"]
    wait_until("a watchdog ping after the pause", lambda: unit(
        "boxd.service", "WatchdogTimestampMonotonic")["WatchdogTimestampMonotonic"] != first, 20)
    h = health()
    assert h["ok"] is True, h
    return (f"same boxd (pid {p['unit']['MainPID']}, NRestarts {p['unit']['NRestarts']}), "
            f"no watchdog timeout logged, pinging again, health ok")


def check_pause_job_still_running():
    p = S["pause"]
    first, last = still_ticking(p["job"], p["ticks"])
    return f"{p['job']['bgId']} running, its log whole from tick 1 to {last}"


def check_pause_foreground_command():
    p = S["pause"]
    p["thread"].join(120)
    assert "error" not in p["fg"], p["fg"].get("error")
    r = p["fg"]["result"]
    assert p["spanned"], f"the command ended before the box was resumed: {r}"
    assert r["exitCode"] == 0 and r["timedOut"] is False and r["stdout"] == "slept\n", r
    # Its 15 s, not the time the box stood still as well.
    assert 15000 <= r["durationMs"] < 25000, r
    return (f"sleep 15 with timeoutSec 25, running through a {p['stopped']:.0f} s stop: exit 0, "
            f"not timed out, durationMs {r['durationMs']}")


def check_pause_then_init_sets_the_clock():
    p = S["pause"]
    host_ms = p["answer"]["contMs"] + (time.monotonic() - p["seen"]) * 1000
    behind = host_ms / 1000 - time.time()
    r = api("POST", "/v1/init", {"unixMs": int(host_ms)})
    assert r["applied"] is True and (r["clockSet"] is True or behind < 1), (behind, r)
    now_ms = p["answer"]["contMs"] + (time.monotonic() - p["seen"]) * 1000
    assert abs(time.time() * 1000 - now_ms) < 2000, "the clock is not the host's after the init"
    return f"{behind:.1f} s behind the host after the pause; init: {json.dumps(r)}"


# ---- a snapshot: savevm, restored twice ----

def read_event(conn, timeout=60):
    conn.settimeout(timeout)
    data = b""
    while b"\n" not in data:
        chunk = conn.recv(65536)
        assert chunk, f"report connection closed after {data!r}"
        data += chunk
    return json.loads(data.split(b"\n")[0])


def new_ids():
    """Ids boxd makes now: foreground and background commands, uploads."""
    ids = [run("true", timeout=60)["id"] for _ in range(3)]
    ids += [api("POST", "/v1/exec", {"cmd": "true", "background": True})["bgId"] for _ in range(2)]
    ids += [api("POST", "/v1/uploads?dest=restored")["uploadId"] for _ in range(3)]
    return ids


def check_snapshot_saved():
    job = start_ticker("ticks across a snapshot")
    # A second boxd reports to a listener here, as the unit's would to the host.
    listener = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    listener.bind((socket.VMADDR_CID_ANY, REPORT_PORT))
    listener.listen(4)
    listener.settimeout(30)
    proc, top = start_boxd("report-restore", "--vsock-port", "off", "--report", f"vsock:1:{REPORT_PORT}")
    conn, _ = listener.accept()
    ready = read_event(conn)
    assert ready["event"] == "ready", ready
    h = health()
    S["snap"] = {"job": job, "listener": listener, "conn": conn, "report": (proc, top),
                 "reportInstanceId": ready["instanceId"], "instanceId": h["instanceId"],
                 "bootId": h["bootId"], "ticks": last_tick(job),
                 "unit": unit("boxd.service", "MainPID", "NRestarts")}
    # A fresh seed in the snapshot: the kernel reseeds by itself once its
    # seed is a minute old, which a restore would otherwise meet at its first
    # draw (from interrupt timings of its own). So the restores below show
    # what a restore right after a reseed shares without the init's entropy.
    with open("/dev/urandom", "rb") as urandom:
        fcntl.ioctl(urandom, RNDRESEEDCRNG)
    answer, seen = ask_host("BOXTEST-SNAPSHOT", timeout=300)
    if answer["event"] == "restored":
        S["snap"]["seen"] = seen
        boxtest.restored = answer  # this box is a restore: the driver turns to restore_check_*
        return "restored"
    assert answer["event"] == "saved", answer
    # The original runs on; what it draws and the ids it makes now are
    # compared with the restores'.
    drawn = draw()
    carry(original={"instanceId": h["instanceId"], "ids": new_ids(), "draw": drawn})
    first, last = still_ticking(job, S["snap"]["ticks"])
    api("POST", f"/v1/procs/{job['bgId']}/stop", {})
    stop_boxd(proc, top)
    conn.close()
    listener.close()
    return (f"savevm took {answer['savevmS']} s ({answer['vmSize']} of memory); the original runs "
            f"on, {job['bgId']} ticking to {last}")


def restore():
    return boxtest.restored["restore"]


def host_now():
    """The host's clock, from its answer written just before the box ran again."""
    return boxtest.restored["hostMs"] / 1000 + time.monotonic() - S["snap"]["seen"]


def restore_check_kernel_reseeded():
    """vmgenid: a restore whose QEMU gave a new generation id reseeds its
    kernel's random generator; one given the saving QEMU's id (restores 1 and
    2, as a cloud kernel without the vmgenid driver) does not."""
    log = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=30).stdout
    lines = [line.strip() for line in log.splitlines() if RESEEDED in line]
    if boxtest.restored["vmgenid"] == "same":
        assert not lines, f"the kernel reseeded without a new generation id: {lines}"
        return "the same generation id as the original: no reseed (as on the cloud kernel)"
    assert len(lines) == 1, f"{len(lines)} kernel lines say {RESEEDED!r}"
    return f"{lines[0]} (the driver saw the restore at {S['snap']['seen']:.3f} s)"


def draw():
    """32 bytes from getrandom() and 32 from /dev/urandom, by a new process."""
    return subprocess.run([sys.executable, "-c", DRAW], capture_output=True, text=True,
                          timeout=60, check=True).stdout


def restore_check_entropy_makes_restores_differ():
    """Right after the restore, before any init, then after an init with
    the entropy the host drew for this restore (API.md "Init")."""
    n = restore()
    before = draw()
    r = api("POST", "/v1/init", {"entropy": boxtest.restored["entropy"]})
    assert r["entropy"] == "reseeded", r
    after = draw()
    carried = boxtest.restored["carried"]
    others = {"the original": carried["original"]["draw"]}
    others.update({who.replace("entropy", "restore "): v["draw"] for who, v in carried.items()
                   if who.startswith("entropy")})
    for who, value in others.items():
        assert after != value, f"after its init restore {n} drew what {who} drew"
    carry(**{f"entropy{n}": {"draw": after, "before": before}})
    shared = [who.replace("entropy", "restore ") for who, v in carried.items()
              if who.startswith("entropy") and v["before"] == before]
    figure(f"restore-{n}-draws-before-init-shared", len(shared))
    return (f"vmgenid {boxtest.restored['vmgenid']}; right after the restore, before any init, it "
            f"drew {'the same bytes as ' + ' and '.join(shared) if shared else 'bytes of its own'}; "
            f"after an init with the host's entropy, bytes no other box drew")


def restore_check_init_sets_clock_and_hosts():
    n = restore()
    behind = host_now() - time.time()
    before = health()["instanceId"]
    figure(f"restore-{n}-clock-behind-s", f"{behind:.1f}")
    hosts = {"restore.wire": f"10.0.{n}.1", "api.wire": "10.0.0.2"}
    r = api("POST", "/v1/init", {"unixMs": int(host_now() * 1000), "hosts": hosts})
    S["init"] = r
    assert r["applied"] is True and r["clockSet"] is True, (behind, r)
    assert abs(time.time() - host_now()) < 2, "the clock is not the host's after the init"
    with open("/etc/hosts") as f:
        text = f.read()
    assert f"10.0.{n}.1\trestore.wire\n" in text and "10.0.0.2\tapi.wire\n" in text, text
    assert socket.gethostbyname("restore.wire") == f"10.0.{n}.1"
    same = "the original's" if before == S["snap"]["instanceId"] else "a new one"
    return (f"the clock was {behind:.0f} s behind (the snapshot's); init set it and the hosts "
            f"block (restore.wire is 10.0.{n}.1); instanceId before the init: {same}")


def restore_check_instance_id_is_new():
    h = health()
    others = {"the original": S["snap"]["instanceId"]}
    others.update({who: v["instanceId"] for who, v in boxtest.restored["carried"].items()
                   if who.startswith("restore")})
    assert h["instanceId"] == S["init"]["instanceId"], (h["instanceId"], S["init"])
    for who, value in others.items():
        assert h["instanceId"] != value, f"instanceId {value} is {who}'s too"
    assert h["bootId"] == S["snap"]["bootId"], "a restore is the same kernel boot"
    same_boxd(S["snap"]["unit"])
    return f"instanceId {h['instanceId'][:8]}..., not {', '.join(others)}'s; bootId unchanged"


def restore_check_new_ids_differ():
    n = restore()
    ids = new_ids()
    assert len(set(ids)) == len(ids), ids
    carried = {who: v for who, v in boxtest.restored["carried"].items() if "ids" in v}
    for who, values in carried.items():
        same = set(ids) & set(values["ids"])
        assert not same, f"ids also made by {who}: {sorted(same)}"
    carry(**{f"restore{n}": {"instanceId": health()["instanceId"], "ids": ids}})
    return f"{len(ids)} new ids ({' '.join(ids[:2])} ...), none made by {' or '.join(carried)}"


def restore_check_job_still_running():
    job = S["snap"]["job"]
    first, last = still_ticking(job, S["snap"]["ticks"])
    return (f"{job['bgId']} running, its log whole from tick 1 to {last} (tick {S['snap']['ticks']} "
            f"when the snapshot was asked for)")


def restore_check_report_reconnects_thawed():
    proc, top = S["snap"]["report"]
    old, listener = S["snap"]["conn"], S["snap"]["listener"]
    r = api("POST", "/v1/init", {}, address=f"{top}/run/boxd.sock")
    conn, _ = listener.accept()
    event = read_event(conn)
    assert event["event"] == "thawed", event
    assert event["instanceId"] == r["instanceId"] != S["snap"]["reportInstanceId"], (event, r)
    # The old connection is closed by boxd, after whatever it had sent on it.
    old.settimeout(30)
    while old.recv(65536):
        pass
    stop_boxd(proc, top)
    return f"a new connection after the init, its first event thawed (instanceId {r['instanceId'][:8]}...)"
