"""Commands' cgroups under systemd 252: restarts that keep jobs, memory figures, caps, OOM.

boxd sits alone in boxd.service's cgroup, which never gets a controller enabled, so systemd can
always start the next boxd there; commands live below boxd-commands.service (its keeper in a
leaf), where boxd enables pids, memory and cpu (docs/confinement.md, "Cgroups")."""
import os
import time

from boxtest import api, figure, health, request, run, sh, unit, wait_until

CG = "/sys/fs/cgroup"
UNIT_CG = CG + "/system.slice/boxd.service"
COMMANDS_CG = CG + "/system.slice/boxd-commands.service"
MIB = 1 << 20

# One python process per job (a fork per line is slow under TCG): LINES numbered lines, one
# every 0.1 s, then exit code k. The log must hold exactly these bytes.
LINES = 120
WRITER = ("python3 -c 'import sys, time\nfor i in range(1, {lines} + 1):\n"
          "    print(\"job {k} line %04d\" % i, flush=True)\n    time.sleep(0.1)\nsys.exit({k})\n'")
# Memory in 8 MiB pieces (filled, so every page is touched) until the kernel says no.
HOG = ("python3 -c 'chunks = []\nwhile True:\n    chunks.append(b\"x\" * (8 << 20))\n'; "
       "echo survived")


def read(path):
    with open(path) as f:
        return f.read()


def cgroup_of(pid):
    return next(l[3:] for l in read(f"/proc/{pid}/cgroup").splitlines() if l.startswith("0::"))


def main_pid():
    return int(unit("boxd.service", "MainPID")["MainPID"])


def restarts():
    return int(unit("boxd.service", "NRestarts")["NRestarts"])


def start_bg(cmd, **fields):
    body = api("POST", "/v1/exec", {"cmd": cmd, "background": True, **fields})
    return body["bgId"], body["logPath"]


def proc(bg_id):
    return api("GET", f"/v1/procs/{bg_id}")


def wait_exited(bg_id, timeout=300):
    return wait_until(f"{bg_id} to exit", lambda: (lambda p: p if p["state"] == "exited"
                                                   else None)(proc(bg_id)), timeout)


def answers():
    try:
        return health() is not None
    except OSError:
        return False


def layout():
    """boxd alone in its unit's cgroup, nothing enabled there; commands' root empty."""
    pid = main_pid()
    assert cgroup_of(pid) == "/system.slice/boxd.service", cgroup_of(pid)
    assert read(UNIT_CG + "/cgroup.subtree_control").strip() == ""
    enabled = set(read(COMMANDS_CG + "/cgroup.subtree_control").split())
    assert {"memory", "pids", "cpu"} <= enabled, enabled
    assert read(COMMANDS_CG + "/cgroup.procs").strip() == "", read(COMMANDS_CG + "/cgroup.procs")
    keeper = read(COMMANDS_CG + "/keeper/cgroup.procs").split()
    assert keeper == [unit("boxd-commands.service", "MainPID")["MainPID"]], keeper


def restart_keeps_jobs(name, restart, counted):
    """counted: systemd restarted boxd itself (NRestarts + 1); a requested
    restart sets NRestarts back to 0 instead."""
    layout()
    jobs = [start_bg(WRITER.format(lines=LINES, k=k)) for k in range(1, 11)]
    wait_until("the ten jobs to write", lambda: all(
        os.path.exists(log) and os.path.getsize(log) > 0 for _, log in jobs), 60)
    before, old_pid = restarts(), main_pid()
    since = sh("date '+%Y-%m-%d %H:%M:%S'").stdout.strip()
    time.sleep(1)
    began = time.monotonic()
    restart(old_pid)
    wait_until("a new boxd serving", lambda: main_pid() not in (0, old_pid) and
               unit("boxd.service", "ActiveState")["ActiveState"] == "active" and answers(),
               120, interval=0.05)
    took = time.monotonic() - began
    figure(f"{name}-to-ready-s", f"{took:.2f}")
    expected = before + 1 if counted else 0
    assert restarts() == expected, (before, restarts())
    journal = sh(f"journalctl -u boxd.service --since '{since}' --no-pager -o cat").stdout
    assert "Failed to start" not in journal and "219/CGROUP" not in journal, journal[-2000:]
    layout()
    listed = {p["bgId"] for p in api("GET", "/v1/procs")["procs"]}
    assert all(bg_id in listed for bg_id, _ in jobs), "the new boxd does not list every job"
    for k, (bg_id, log) in enumerate(jobs, start=1):
        ended = wait_exited(bg_id)
        assert ended["exitCode"] == k and ended["signal"] is None, ended
        written = "".join(f"job {k} line {i:04d}\n" for i in range(1, LINES + 1))
        assert read(log) == written, f"{bg_id}: the log is not the {LINES} lines written"
        api("DELETE", f"/v1/procs/{bg_id}")
    assert restarts() == expected, "boxd restarted again"
    return f"ready {took:.2f} s after the {name}; 10 jobs kept, logs byte-exact, exit codes 1..10"


def check_commands_cgroup_layout():
    layout()
    bg_id, _ = start_bg("sleep 60")
    pid = proc(bg_id)["pid"]
    assert cgroup_of(pid) == f"/system.slice/boxd-commands.service/{bg_id}", cgroup_of(pid)
    assert read(f"{COMMANDS_CG}/{bg_id}/memory.oom.group").strip() == "1"
    assert read(f"{COMMANDS_CG}/{bg_id}/pids.max").strip() == "1024"
    assert read(f"{COMMANDS_CG}/{bg_id}/memory.max").strip() == "max"
    api("POST", f"/v1/procs/{bg_id}/stop", {"graceSec": 1})
    ended = wait_exited(bg_id)
    assert ended["signal"] == "SIGTERM" and ended["oomKilled"] is False, ended
    api("DELETE", f"/v1/procs/{bg_id}")
    return "boxd alone in boxd.service (no controllers), commands below boxd-commands.service"


def check_peak_memory_and_cpu():
    body = run("python3 -c 'import time\nx = b\"x\" * (80 << 20)\nt = time.process_time()\n"
               "while time.process_time() - t < 0.5: pass\n'")
    assert body["exitCode"] == 0, body
    assert body["peakMemoryBytes"] is not None and body["peakMemoryBytes"] >= 80 * MIB, body
    assert body["cpuMs"] is not None and body["cpuMs"] >= 400, body
    assert body["oomKilled"] is False and body["signal"] is None, body
    return f"peakMemoryBytes {body['peakMemoryBytes']}, cpuMs {body['cpuMs']}"


def check_memory_max_bytes_cap():
    pid, before = main_pid(), restarts()
    other, other_log = start_bg(WRITER.format(lines=50, k=0))
    body = run(HOG, memoryMaxBytes=64 * MIB, timeout=300)
    assert body["oomKilled"] is True and body["signal"] == "SIGKILL", body
    assert body["exitCode"] == 137 and "survived" not in body["stdout"], body
    assert 0 < body["peakMemoryBytes"] <= 64 * MIB, body
    assert main_pid() == pid and restarts() == before, "boxd was hit"
    ended = wait_exited(other)
    assert ended["exitCode"] == 0 and ended["oomKilled"] is False, ended
    assert read(other_log).count("job 0 line") == 50
    status, _, data = request("POST", "/v1/exec", {"cmd": "true", "memoryMaxBytes": 1000})
    assert status == 400 and b"memoryMaxBytes must be a whole number" in data, data
    return f"capped at 64 MiB: exit 137, SIGKILL, oomKilled, peak {body['peakMemoryBytes']}"


def check_crash_restarts_once_and_keeps_jobs():
    return restart_keeps_jobs(
        "crash", lambda pid: sh("systemctl kill --kill-who=main -s KILL boxd"), True)


def check_watchdog_restart_keeps_jobs():
    dropin = "/run/systemd/system/boxd.service.d"
    os.makedirs(dropin, exist_ok=True)
    with open(dropin + "/60-cgroups-watchdog.conf", "w") as f:
        f.write("[Service]\nWatchdogSec=4s\n")
    sh("systemctl daemon-reload")
    try:
        old = main_pid()
        sh("systemctl restart boxd")  # boxd reads WATCHDOG_USEC at its start
        wait_until("boxd with a 4 s watchdog", lambda: main_pid() not in (0, old) and answers(),
                   60)
        assert unit("boxd.service", "WatchdogUSec")["WatchdogUSec"] == "4s"
        return restart_keeps_jobs("watchdog", lambda pid: os.kill(pid, 19), True)  # SIGSTOP
    finally:
        os.unlink(dropin + "/60-cgroups-watchdog.conf")
        sh("systemctl daemon-reload")
        old = main_pid()
        sh("systemctl restart boxd")  # back to the unit's own 30 s
        wait_until("boxd back", lambda: main_pid() not in (0, old) and answers(), 60)


def check_systemctl_restart_keeps_jobs():
    return restart_keeps_jobs("systemctl-restart", lambda pid: sh("systemctl restart boxd"),
                              False)


def check_box_wide_oom_meets_a_command_first():
    cap = read(COMMANDS_CG + "/memory.max").strip()
    total = int(read("/proc/meminfo").split()[1]) * 1024
    assert cap != "max" and int(cap) < total, (cap, total)
    figure("commands-memory-max-mib", f"{int(cap) // MIB} of {total // MIB}")
    pid, before = main_pid(), restarts()
    others = [start_bg(WRITER.format(lines=150, k=0)) for _ in range(3)]
    hog, _ = start_bg(HOG)
    ended = wait_exited(hog, timeout=600)
    assert ended["oomKilled"] is True and ended["signal"] == "SIGKILL", ended
    assert ended["exitCode"] == 137, ended
    assert main_pid() == pid and restarts() == before, "boxd was hit"
    assert answers()
    for bg_id, log in others:
        done = wait_exited(bg_id)
        assert done["exitCode"] == 0 and done["oomKilled"] is False, done
        assert read(log).count("job 0 line") == 150, f"{bg_id} lost output"
    for name in ("boxd.service", "boxd-commands.service"):  # OOMPolicy=continue
        assert unit(name, "ActiveState")["ActiveState"] == "active", name
    layout()
    return (f"hog killed (peak {ended['peakMemoryBytes'] // MIB} MiB, commands' cap "
            f"{int(cap) // MIB} MiB); boxd and 3 other jobs untouched")
