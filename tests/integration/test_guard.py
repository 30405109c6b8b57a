"""Hostile and careless commands: boxd, every shim and every worker are out
of a command's reach, known by identity (pid and start time), never by name.
Each command here runs as root, as commands in a box do."""
import os
import shutil

import pytest

from conftest import BOXD, Boxd, wait_for
from exec_helpers import alive, box, cleanup, ok, proc, run, shim_states, start_bg  # noqa: F401


def other_shim(box):
    job = start_bg(box, "sleep 60")
    return int(wait_for(lambda: [s for s in shim_states(box) if s["id"] == job],
                        what="the other shim")[0]["shimPid"])


def process_group(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[2])


def test_every_shim_leads_its_own_group_and_a_group_kill_is_refused(box):
    shims = [other_shim(box) for _ in range(3)]
    assert [process_group(pid) for pid in shims] == shims
    body = ok(box, f"kill -9 -{shims[0]}; echo $?; kill -TERM -{shims[1]}; echo $?; "
                   f"kill -9 -{process_group(box.proc.pid)}; echo $?")
    assert body["stdout"] == "1\n1\n1\n", body
    assert all(alive(pid) for pid in shims) and box.proc.poll() is None


def test_a_renamed_boxd_binary_is_still_protected(tmp_path):
    """Protection is by identity: renaming boxd's binary (what /proc/PID/exe
    shows) changes nothing."""
    linked = os.path.join(os.path.dirname(BOXD), "boxd-renamed-for-test")
    if os.path.exists(linked):
        os.unlink(linked)
    os.link(BOXD, linked)
    instance = Boxd(str(tmp_path))
    instance.args = (lambda *extra, original=instance.args: [linked, *original(*extra)[1:]])
    instance.start()
    try:
        moved = linked + "-moved"
        body = ok(instance, f"mv {linked} {moved}; kill -9 {instance.proc.pid}; echo $?")
        assert body["stdout"] == "1\n", body
        assert instance.proc.poll() is None
    finally:
        instance.stop()
        cleanup(instance)
        for path in (linked, linked + "-moved"):
            if os.path.exists(path):
                os.unlink(path)


def test_a_proc_dir_reached_through_a_bind_mount_is_still_refused(box, tmp_path):
    mount = tmp_path / "proc-again"
    mount.mkdir()
    script = (f"mount --bind /proc {mount} || exit 3; "
              f"python3 -c \"import os, signal; "
              f"fd = os.open('{mount}/{box.proc.pid}', os.O_RDONLY | os.O_DIRECTORY); "
              f"signal.pidfd_send_signal(fd, 9)\"; echo $?; umount {mount}")
    body = ok(box, script)
    assert body["stdout"] == "1\n", body
    assert "PermissionError" in body["stderr"]
    assert box.proc.poll() is None


def test_a_fifo_called_stat_in_a_directory_does_not_wedge_the_guard(box, tmp_path):
    """The guard reads a /proc/PID dir's `stat` to tell its pid: a directory
    of the command's own with a FIFO called `stat` must not hold the shim in
    open(), where it would miss the command's timeout."""
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "d" / "stat")
    script = ("import os, signal\n"
              "for path in ('d', '/proc/BOXD'):\n"
              "    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)\n"
              "    try:\n"
              "        signal.pidfd_send_signal(fd, 9)\n"
              "    except OSError as e:\n"
              "        print(e.errno, flush=True)\n").replace("BOXD", str(box.proc.pid))
    status, body = run(box, "python3 - && sleep 60", stdin=script, cwd=str(tmp_path),
                       timeoutSec=2, timeout=20)
    assert status == 200, body
    assert body["stdout"] == "9\n1\n", body  # EBADF: not a pidfd; EPERM: boxd
    assert body["timedOut"] is True and body["durationMs"] < 6000, body
    assert box.proc.poll() is None


@pytest.mark.parametrize("how", [
    "fcntl.fcntl(r, fcntl.F_SETOWN, PID)",
    "fcntl.fcntl(r, fcntl.F_SETOWN, -GROUP)",
    "fcntl.fcntl(r, 15, struct.pack('ii', 1, PID))",  # F_SETOWN_EX, F_OWNER_PID
    "fcntl.ioctl(s, 0x8901, struct.pack('i', PID))",  # FIOSETOWN
    "fcntl.ioctl(s, 0x8902, struct.pack('i', PID))",  # SIOCSPGRP
])
def test_a_signal_owner_cannot_be_a_protected_process(box, how):
    """F_SETOWN + F_SETSIG + O_ASYNC would have the kernel signal boxd when
    the fd is ready: naming boxd as the owner is refused."""
    code = how.replace("PID", str(box.proc.pid)).replace("GROUP", str(process_group(box.proc.pid)))
    script = ("import fcntl, os, socket, struct\n"
              "r, w = os.pipe()\ns = socket.socket()\n"
              f"fcntl.fcntl(r, fcntl.F_SETSIG if hasattr(fcntl, 'F_SETSIG') else 10, 9)\n"
              f"{code}\n"
              "fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC)\nos.write(w, b'x')\nprint('set')\n")
    body = ok(box, "python3 -", stdin=script)
    assert "PermissionError" in body["stderr"] and "set" not in body["stdout"], body
    assert box.proc.poll() is None


def test_a_signal_owner_of_its_own_is_fine(box):
    script = ("import fcntl, os\nr, w = os.pipe()\n"
              "fcntl.fcntl(r, fcntl.F_SETOWN, os.getpid())\nprint(fcntl.fcntl(r, fcntl.F_GETOWN))\n")
    body = ok(box, "python3 -", stdin=script)
    assert body["stdout"].strip().isdigit(), body


def test_limits_of_protected_processes_cannot_be_changed(box):
    shim = other_shim(box)
    body = ok(box, f"prlimit --pid {box.proc.pid} --cpu=1:1; echo $?; "
                   f"prlimit --pid {shim} --nofile=3:3; echo $?; "
                   f"prlimit --pid {box.proc.pid} --nofile >/dev/null; echo $?; "
                   f"prlimit --pid $$ --nofile=512:512; echo $?")
    assert body["stdout"] == "1\n1\n0\n0\n", body
    with open(f"/proc/{box.proc.pid}/limits") as f:
        assert "Max cpu time              unlimited" in f.read()


def test_tracing_or_writing_into_protected_processes_is_refused(box):
    script = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
              f"print(libc.ptrace(16, {box.proc.pid}, 0, 0), ctypes.get_errno())\n"  # ATTACH
              f"print(libc.ptrace(0x4206, {box.proc.pid}, 0, 0), ctypes.get_errno())\n"  # SEIZE
              "buf = ctypes.create_string_buffer(8)\n"
              "class iovec(ctypes.Structure):\n"
              "    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]\n"
              "local = iovec(ctypes.cast(buf, ctypes.c_void_p), 8)\n"
              "remote = iovec(0x400000, 8)\n"
              f"print(libc.process_vm_writev({box.proc.pid}, ctypes.byref(local), 1, "
              "ctypes.byref(remote), 1, 0), ctypes.get_errno())\n")
    body = ok(box, "python3 -", stdin=script)
    assert body["stdout"] == "-1 1\n-1 1\n-1 1\n", body
    assert box.proc.poll() is None


PIDFD_CALLS = """
import ctypes, errno, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def call(number, *args):
    result = libc.syscall(number, *args)
    return result, (errno.errorcode[ctypes.get_errno()] if result < 0 else "ok")

def getfd(pid, fd):
    handle = os.pidfd_open(pid)
    result, said = call(438, handle, fd, 0)  # pidfd_getfd
    if result >= 0:
        os.close(result)
    os.close(handle)
    return said

def own_shim():
    pid = os.getpid()
    while pid > 1:
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
        if os.path.basename(os.readlink(f"/proc/{pid}/exe")) == "boxd-shim":
            return pid

class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

with open(f"/proc/{BOXD}/maps") as f:
    start = int(f.readline().split("-")[0], 16)
page = iovec(start, 4096)
handle = os.pidfd_open(BOXD)
print("shim", sorted({getfd(own_shim(), fd) for fd in range(64)}))
print("boxd", sorted({getfd(BOXD, fd) for fd in range(64)}))
print("madvise", call(440, handle, ctypes.byref(page), 1, 20, 0)[1])  # MADV_COLD
print("mrelease", call(448, handle, 0)[1])
print("kcmp", call(312, os.getpid(), BOXD, 0, 1, 1)[1])  # KCMP_FILE
child = subprocess.Popen(["sleep", "30"])
print("own", getfd(child.pid, 1), getfd(os.getpid(), 0))
child.kill()
"""


def test_fds_and_memory_of_protected_processes_cannot_be_reached_through_a_pidfd(box):
    """pidfd_getfd would hand a command its shim's guard listener (then it
    approves its own kill of boxd) or boxd's listening socket; process_madvise,
    process_mrelease and kcmp act on or look into another process alike."""
    body = ok(box, "python3 -", stdin=PIDFD_CALLS.replace("BOXD", str(box.proc.pid)))
    assert body["stdout"].splitlines() == [
        "shim ['EPERM']", "boxd ['EPERM']", "madvise EPERM", "mrelease EPERM", "kcmp EPERM",
        "own ok ok"], body
    assert box.proc.poll() is None
    assert ok(box, "echo still")["stdout"] == "still\n"


MOVE_BOXD = ("cg=$(sed -n 's/^0:://p' /proc/self/cgroup); "
             "m=$(awk '$9 == \"cgroup2\" {print $5; exit}' /proc/self/mountinfo); "
             "into=\"${INTO:-$m$cg}$SUB\"; mkdir -p \"$into\" || exit 6; "
             "echo BOXD > \"$into/cgroup.procs\" || exit 7; "
             "grep -qx BOXD \"$into/cgroup.procs\" && echo moved; ")


def cgroup_of(pid):
    with open(f"/proc/{pid}/cgroup") as f:
        return [line for line in f.read().splitlines() if line.startswith("0::")][0]


def move_boxd(box, then, into="", sub="", **fields):
    body = ok(box, MOVE_BOXD.replace("BOXD", str(box.proc.pid)) + then,
              env={"INTO": into, "SUB": sub}, **fields)
    if "moved" not in body["stdout"]:
        pytest.fail(f"the command could not move boxd into that cgroup here: {body}")
    return body


@pytest.mark.parametrize("sub", ["", "/sub", "/sub/deeper/still"])
def test_boxd_moved_into_a_commands_cgroup_survives_its_timeout(box, sub):
    """A command that puts boxd's pid into its own cgroup, or into one it
    made below it (cgroup.kill reaches those too): when the command times out
    and its cgroup is killed, boxd is sent home first."""
    home = cgroup_of(box.proc.pid)
    body = move_boxd(box, "sleep 60", sub=sub, timeoutSec=1)
    assert body["timedOut"] is True
    assert box.proc.poll() is None and cgroup_of(box.proc.pid) == home
    assert ok(box, "echo still")["stdout"] == "still\n"


def test_boxd_moved_below_another_jobs_cgroup_survives_its_stop(box):
    home = cgroup_of(box.proc.pid)
    job = start_bg(box, "sleep 60")
    other = wait_for(lambda: [s for s in shim_states(box) if s["id"] == job],
                     what="the other job")[0]["cgroup"]
    move_boxd(box, "true", into=other, sub="/sub/deeper")
    status, body = box.call("POST", f"/v1/procs/{job}/stop", {"signal": "SIGKILL"})
    assert status == 200, body
    wait_for(lambda: proc(box, job)["state"] == "exited", what="the other job to end")
    assert box.proc.poll() is None and cgroup_of(box.proc.pid) == home
    assert ok(box, "echo still")["stdout"] == "still\n"
    wait_for(lambda: not os.path.exists(other), what="the other job's cgroups removed")


def test_boxd_left_below_a_commands_cgroup_goes_home_at_its_end(box):
    """No timeout, no stop: the command ends with boxd in a cgroup below its
    own. Its shim sends boxd home before it removes the command's cgroups."""
    home = cgroup_of(box.proc.pid)
    body = move_boxd(box, "exit 0", sub="/sub")
    assert body["exitCode"] == 0
    wait_for(lambda: cgroup_of(box.proc.pid) == home, what="boxd back in its own cgroup")
    assert ok(box, "echo still")["stdout"] == "still\n"


def test_the_screen_worker_is_protected(boxd_factory, xvfb):
    if not shutil.which("pkill"):
        pytest.fail("pkill (procps) is missing")
    instance = boxd_factory("--display", xvfb.display)
    status, _ = instance.call("GET", "/v1/screen/shot")
    assert status == 200
    workers = [pid for pid in os.listdir("/proc") if pid.isdigit() and _comm(pid) == "boxd-screen"
               and _parent(pid) == instance.proc.pid]
    assert workers, "no screen worker"
    body = ok(instance, f"kill -9 {workers[0]}; echo $?")
    assert body["stdout"] == "1\n", body
    assert alive(int(workers[0]))


def _comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def _parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return 0
