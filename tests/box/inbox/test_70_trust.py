"""What a command may reach, under systemd and Debian 12's kernel.

The routes that act for the control plane answer 403 to commands; an init
with a time far ahead does not make the next real one lose; boxd comes back
and starts commands after a cgroup.kill of its own cgroup, whatever the
kernel does to a child cloned into a cgroup from a killed one; a command that
freezes the shims, or moves boxd away (and freezes it there), holds nothing
up for long."""
import json
import os
import shlex
import subprocess
import time

from boxtest import (api, boxd_main_pid, figure, health, request, run, serving_again, sh,
                     wait_until)

CGROUP = "/sys/fs/cgroup"
BOXD_CGROUP = f"{CGROUP}/system.slice/boxd.service"
COMMANDS_CGROUP = f"{CGROUP}/system.slice/boxd-commands.service"

# A command's own HTTP call to boxd: prints "STATUS BODY".
CALL = """
import http.client, json, socket, sys
class C(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect("/run/boxd/boxd.sock")
c = C("boxd", timeout=20)
c.request(sys.argv[1], sys.argv[2], body=sys.argv[3])
r = c.getresponse()
print(r.status, r.read().decode())
"""


def cgroup_of(pid):
    with open(f"/proc/{pid}/cgroup") as f:
        return next(line[3:].strip() for line in f if line.startswith("0::"))


def read_or_empty(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def command_call(method, path, body):
    with open("/work/boxtest-call.py", "w") as f:
        f.write(CALL)
    argv = " ".join(shlex.quote(a) for a in ["python3", "/work/boxtest-call.py", method, path,
                                               json.dumps(body)])
    result = run(argv, timeout=60)
    assert result["exitCode"] == 0, result
    status, _, text = result["stdout"].strip().partition(" ")
    return int(status), json.loads(text)


def check_control_routes_refuse_commands():
    for method, path, body in [("POST", "/v1/init", {}),
                               ("PUT", "/v1/lock", {"locked": True}),
                               ("PUT", "/v1/secrets", {"secrets": {"A": "a-secret-value-1"}}),
                               ("PUT", "/v1/env/api", "TOKEN=x")]:
        status, answer = command_call(method, path, body)
        assert status == 403 and answer["error"]["code"] == "forbidden", (path, status, answer)
    assert health()["locked"] is False and health()["secrets"]["count"] == 0
    # The same calls from outside every command (this driver) go through.
    lock = api("PUT", "/v1/lock", {"locked": True})
    assert len(lock["token"]) == 32
    api("PUT", "/v1/lock", {"locked": False})
    return "init, lock, secrets, env: 403 to a command; the driver's lock went through"


def check_a_far_future_init_does_not_make_the_next_lose():
    """An init a day ahead applies (only the control plane or a person can
    send it now); the next real one, a day older, is the host's word and
    applies too, clock included."""
    start_wall, start_mono = time.time(), time.monotonic()

    def real_ms():
        return int((start_wall + time.monotonic() - start_mono) * 1000)

    ahead = api("POST", "/v1/init", {"unixMs": real_ms() + 86_400_000})
    assert ahead["applied"] is True and ahead["clockSet"] is True, ahead
    assert time.time() * 1000 > real_ms() + 86_000_000
    real = api("POST", "/v1/init", {"unixMs": real_ms()})
    assert real["applied"] is True and real["clockSet"] is True, real
    assert abs(time.time() * 1000 - real_ms()) < 5000
    # A late duplicate (a second older) still changes nothing.
    late = api("POST", "/v1/init", {"unixMs": real_ms() - 1000})
    assert late["applied"] is False, late
    return "a day ahead, then now: both applied, the clock back within 5 s"


KILL_PROBE = """
import ctypes, os, struct, sys, time
a, b = sys.argv[1], sys.argv[2]
os.makedirs(a, exist_ok=True); os.makedirs(b, exist_ok=True)
victim = os.fork()
if victim == 0:
    time.sleep(60); os._exit(0)
open(a + "/cgroup.procs", "w").write(str(victim))
open(a + "/cgroup.kill", "w").write("1")
os.waitpid(victim, 0)
open(a + "/cgroup.procs", "w").write(str(os.getpid()))
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(b, os.O_PATH | os.O_DIRECTORY)
args = ctypes.create_string_buffer(struct.pack("11Q", 0x200000000, 0, 0, 0, 17, 0, 0, 0, 0, 0, fd))
pid = libc.syscall(435, args, 88)
if pid == 0:
    os._exit(7)
_, status = os.waitpid(pid, 0)
open(os.path.dirname(a) + "/cgroup.procs", "w").write(str(os.getpid()))
print("killed at birth" if os.WIFSIGNALED(status) else "lives")
"""


def kernel_kills_clones_from_killed_cgroups():
    top = f"{CGROUP}/boxtest-killseq"
    with open("/work/boxtest-killseq.py", "w") as f:
        f.write(KILL_PROBE)
    out = sh(f"python3 /work/boxtest-killseq.py {top}/a {top}/b")
    for name in ("a", "b", ""):
        try:
            os.rmdir(f"{top}/{name}".rstrip("/"))
        except OSError:
            pass
    assert out.returncode == 0 and out.stdout.strip() in ("killed at birth", "lives"), out
    return out.stdout.strip()


def check_commands_start_after_a_kill_of_boxds_cgroup():
    kernel = kernel_kills_clones_from_killed_cgroups()
    figure("kernel_clone_into_cgroup_after_kill", kernel)
    old = boxd_main_pid()
    job = api("POST", "/v1/exec", {"cmd": "sleep 300", "background": True})
    write(f"{BOXD_CGROUP}/cgroup.kill", "1")
    started = time.monotonic()
    wait_until("boxd serving again", lambda: serving_again(old), 60)
    figure("cgroup_kill_to_serving_s", round(time.monotonic() - started, 1))
    for i in range(5):
        result = run(f"echo after-kill-{i}", timeout=30)
        assert result["stdout"] == f"after-kill-{i}\n" and result["exitCode"] == 0, result
    assert api("GET", f"/v1/procs/{job['bgId']}")["state"] == "running"
    api("POST", f"/v1/procs/{job['bgId']}/stop", {"graceSec": 1})
    return f"the kernel: {kernel}; 5 commands ran after the kill"


def spare_pids():
    """The waiting spare shims (the maker, `--spares`, is not one)."""
    return set(int(p) for p in sh("pgrep -f '^boxd-shim --spare( |$)'").stdout.split())


def check_commands_start_after_a_kill_of_the_shims_cgroup():
    old_spares = spare_pids()
    write(f"{COMMANDS_CGROUP}/shims/cgroup.kill", "1")
    # The spare maker and the spares are gone: boxd makes them again once it
    # has seen them go. (A command handed to a spare in the instant of its
    # kill fails: "the command's supervisor (boxd-shim) exited without
    # answering", and the caller may look it up by its id.)
    wait_until("two new spares", lambda: len(spare_pids() - old_spares) >= 2, 30, 0.2)
    for i in range(5):
        result = run(f"echo after-shims-kill-{i}", timeout=30)
        assert result["stdout"] == f"after-shims-kill-{i}\n" and result["exitCode"] == 0, result
    result = run("sleep 30", timeout=2)
    assert result["timedOut"] is True, result
    return "5 commands and a timeout after the shims were killed"


def check_frozen_commands_cgroup_is_thawed():
    """A command freezes the commands' cgroup (itself, every shim with it)."""
    started = time.monotonic()
    result = run(f"echo 1 > {COMMANDS_CGROUP}/cgroup.freeze; echo done", timeout=30)
    assert result["stdout"] == "done\n", result
    assert open(f"{COMMANDS_CGROUP}/cgroup.freeze").read().strip() == "0"
    figure("frozen_commands_thawed_within_s", round(time.monotonic() - started, 2))
    result = run("sleep 30", timeout=2)
    assert result["timedOut"] is True, result
    write(f"{COMMANDS_CGROUP}/shims/cgroup.freeze", "1")
    wait_until("the shims thawed", lambda: open(f"{COMMANDS_CGROUP}/shims/cgroup.freeze").read()
               .strip() == "0", 5, 0.05)
    assert run("echo thawed", timeout=30)["stdout"] == "thawed\n"
    return "the commands' cgroup and the shims' thawed; timeouts on time"


def check_boxd_moved_by_a_command_goes_back():
    pid = boxd_main_pid()
    away = f"{CGROUP}/boxtest-away"
    result = run(f"mkdir -p {away} && echo {pid} > {away}/cgroup.procs && cat /proc/{pid}/cgroup")
    assert "boxtest-away" in result["stdout"], result
    wait_until("boxd back in its unit", lambda: cgroup_of(pid) == "/system.slice/boxd.service", 15,
               0.2)
    assert boxd_main_pid() == pid
    os.rmdir(away)
    return "back at the next watchdog ping, same process"


def check_boxd_moved_and_frozen_is_restarted():
    old = boxd_main_pid()
    trap = f"{CGROUP}/boxtest-trap"
    api("POST", "/v1/exec", {"background": True, "cmd": f"mkdir -p {trap} && echo {old} > "
                             f"{trap}/cgroup.procs && echo 1 > {trap}/cgroup.freeze"})
    started = time.monotonic()
    wait_until("boxd frozen", lambda: "frozen 1" in read_or_empty(f"{trap}/cgroup.events"), 10, 0.1)
    wait_until("a new boxd serving", lambda: serving_again(old), 60)
    outage = round(time.monotonic() - started, 1)
    figure("moved_and_frozen_outage_s", outage)
    assert outage < 25, outage
    assert run("echo back", timeout=30)["stdout"] == "back\n"
    write(f"{trap}/cgroup.freeze", "0")
    wait_until("the trap empty", lambda: "populated 0" in open(f"{trap}/cgroup.events").read(), 10)
    os.rmdir(trap)
    return f"served again {outage} s after the freeze (watchdog 10 s + abort 5 s)"


def check_boxd_moved_below_a_job_survives_its_stop():
    """A command moves boxd into a cgroup below its own and is stopped: the
    shim moves boxd home before the kill reaches the subtree."""
    pid = boxd_main_pid()
    job = api("POST", "/v1/exec", {"background": True, "cmd":
                                   "sub=/sys/fs/cgroup$(grep ^0:: /proc/self/cgroup | cut -d: -f3)/deeper/still; "
                                   f"mkdir -p $sub && echo {pid} > $sub/cgroup.procs && sleep 300"})
    wait_until("boxd below the job", lambda: "/deeper/still" in cgroup_of(pid), 30, 0.2)
    api("POST", f"/v1/procs/{job['bgId']}/stop", {"graceSec": 1})
    wait_until("the job stopped", lambda: api("GET", f"/v1/procs/{job['bgId']}")["state"] ==
               "exited", 30)
    assert boxd_main_pid() == pid and cgroup_of(pid) == "/system.slice/boxd.service"
    return "boxd back in its unit, same process, after the job's kill"


def check_a_lock_and_secrets_survive_a_crash_of_boxd():
    api("PUT", "/v1/secrets", {"secrets": {"KEPT": "kept-across-a-crash"}})
    lock = api("PUT", "/v1/lock", {"locked": True, "note": "paying"})
    old = boxd_main_pid()
    sh("systemctl kill --kill-who=main -s KILL boxd")
    wait_until("boxd serving again", lambda: serving_again(old), 60)
    state = api("GET", "/v1/lock")
    assert state["locked"] is True and state["note"] == "paying", state
    status, _, _ = request("POST", "/v1/exec", {"cmd": "true"})
    assert status == 423, status
    status, _, _ = request("POST", "/v1/screen/input", {"actions": [{"type": "wait", "ms": 1}]},
                           headers={"X-Takeover": lock["token"]})
    assert status == 200, status
    assert health()["secrets"]["count"] == 1
    api("PUT", "/v1/lock", {"locked": False})
    api("PUT", "/v1/secrets", {"secrets": {}})
    return "locked and the secrets kept across systemd's restart; the person's token still works"
