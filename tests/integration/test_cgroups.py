"""Commands' cgroups on a development host: memoryMaxBytes, signal names,
oomKilled, and the commands' cgroup of a unit (--commands-cgroup).

The OOM killer, memory caps and systemd restarts need a booted box (the
memory controller, systemd as PID 1): tests/box has those. Here the hosts
are hybrid (cgroup2 without controllers), so what depends on the memory
controller is checked both ways: enforced where the kernel can, refused
(or null) where it cannot."""
import os
import subprocess
import uuid

import pytest

from conftest import BOXD, wait_for
from exec_helpers import (alive, box, cleanup, ok, remove_cgroup, run, start_bg,  # noqa: F401
                          wait_exited)

MIB = 1024 * 1024


def cgroup2_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            dash = fields.index("-")
            if fields[dash + 1] == "cgroup2":
                return fields[4]
    return None


def own_cgroup2(pid="self"):
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                return line[3:].strip()
    return None


def memory_known(boxd):
    """True when boxd's commands have the memory controller (memory.peak)."""
    return ok(boxd, "true")["peakMemoryBytes"] is not None


@pytest.mark.parametrize("value", [0, 1, 4 * MIB - 1, 2 ** 50 + 1, 64 * MIB + 0.5, "67108864",
                                   -MIB, True, [MIB]])
def test_memory_max_bytes_out_of_range_is_400(box, value):
    status, body = run(box, "true", memoryMaxBytes=value)
    assert status == 400 and body["error"]["code"] == "bad_request", body
    assert "memoryMaxBytes must be a whole number from 4194304" in body["error"]["message"]


def test_memory_max_bytes_enforced_or_refused(box):
    """A cap boxd cannot enforce is refused, never silently dropped."""
    status, body = run(box, "head -c 200m /dev/zero | tail -c 1 >/dev/null; echo after",
                       memoryMaxBytes=64 * MIB)
    if memory_known(box):
        # tail holds 200 MiB of one line: over the cap, the whole tree is killed.
        assert status == 200, body
        assert body["oomKilled"] is True and body["signal"] == "SIGKILL", body
        assert body["exitCode"] == 137 and "after" not in body["stdout"]
        assert body["peakMemoryBytes"] <= 64 * MIB
    else:
        assert status == 400 and body["error"]["code"] == "bad_request", body
        assert "memoryMaxBytes cannot be enforced here" in body["error"]["message"]
        assert "memory controller" in body["error"]["message"]


def test_no_cap_and_null_cap_run(box):
    for fields in ({}, {"memoryMaxBytes": None}):
        body = ok(box, "echo fine", **fields)
        assert body["exitCode"] == 0 and body["stdout"] == "fine\n"


def test_oom_killed_is_null_where_unknown(box):
    body = ok(box, "exit 0")
    # Both come from the memory controller: known together or not at all.
    if body["peakMemoryBytes"] is None:
        assert body["oomKilled"] is None, body
    else:
        assert body["oomKilled"] is False, body


@pytest.mark.parametrize("cmd,code,name", [
    # The shell reports a child killed by signal N as 128+N.
    ("bash -c 'kill -KILL $$'", 137, "SIGKILL"),
    ("sh -c 'kill -TERM $$'; true $?; sh -c 'kill -TERM $$'", 143, "SIGTERM"),
    ("sleep 30 & kill -USR1 $!; wait $!; exit $?", 138, "SIGUSR1"),
    # The shell itself killed.
    ("kill -ABRT $$", 134, "SIGABRT"),
    # Plain exits, including codes past 128+64 that name no signal.
    ("exit 3", 3, None),
    ("exit 128", 128, None),
    ("exit 200", 200, None),
])
def test_signal_is_named_when_the_status_shows_one(box, cmd, code, name):
    body = ok(box, cmd)
    assert body["exitCode"] == code and body["signal"] == name, body
    bg = start_bg(box, cmd)
    ended = wait_exited(box, bg)
    assert ended["exitCode"] == code and ended["signal"] == name, ended


def test_commands_cgroup_holds_commands_and_boxd_stays_put(boxd_factory):
    mount = cgroup2_mount()
    if not mount or not os.access(mount, os.W_OK):
        pytest.skip("no writable cgroup2 mount")
    name = f"/boxd-test-commands-{uuid.uuid4().hex[:8]}"
    commands = mount + name
    os.mkdir(commands)
    instance = None
    try:
        instance = boxd_factory("--commands-cgroup", name)
        before = own_cgroup2(instance.proc.pid)
        bg = start_bg(instance, "sleep 60")
        pid = wait_for(lambda: (lambda p: p["pid"] if p["pid"] else None)(
            instance.call("GET", f"/v1/procs/{bg}")[1]), what="the job's pid")
        assert own_cgroup2(pid) == f"{name}/{bg}"
        # The shims wait in a leaf of their own; boxd did not move itself.
        assert os.path.isdir(os.path.join(commands, "shims"))
        assert own_cgroup2(instance.proc.pid) == before
        assert f"{name}" not in "".join(open(f"/proc/{instance.proc.pid}/cgroup"))
        assert "commands' cgroup" not in instance.log()  # no complaint: it was used
        status, _ = instance.call("POST", f"/v1/procs/{bg}/stop", {"graceSec": 1})
        assert status == 200
        assert wait_exited(instance, bg)["signal"] == "SIGTERM"
        instance.stop()
        # The commands' cgroup belongs to its unit: boxd never removes it.
        assert os.path.isdir(commands)
    finally:
        if instance:
            instance.stop()
            cleanup(instance)
        remove_cgroup(os.path.join(commands, "shims"))
        remove_cgroup(commands)


def test_missing_commands_cgroup_falls_back(boxd_factory):
    name = f"/boxd-test-missing-{uuid.uuid4().hex[:8]}"
    instance = boxd_factory("--commands-cgroup", name)
    try:
        body = ok(instance, "echo still runs")
        assert body["exitCode"] == 0 and body["stdout"] == "still runs\n"
        if cgroup2_mount():
            assert "is missing (is boxd-commands.service active?)" in instance.log()
    finally:
        instance.stop()
        cleanup(instance)


@pytest.mark.parametrize("value", ["relative/path", "/a/../b", "//x", ""])
def test_bad_commands_cgroup_is_a_usage_error(tmp_path, value):
    out = subprocess.run([BOXD, "--run-dir", str(tmp_path), "--work-dir", str(tmp_path),
                          "--commands-cgroup", value], capture_output=True, text=True, timeout=10)
    assert out.returncode == 2 and "--commands-cgroup" in out.stderr


def kill_cgroup(path):
    """Its processes killed (new ones may come in meanwhile: boxd's spares)."""
    with open(os.path.join(path, "cgroup.procs")) as f:
        killed = [int(pid) for pid in f.read().split()]
    with open(os.path.join(path, "cgroup.kill"), "w") as f:
        f.write("1")
    wait_for(lambda: not any(alive(pid) for pid in killed), what=f"{path} killed")


def remove_tree(top):
    """Every cgroup under `top` emptied and removed, deepest first."""
    if not os.path.isdir(top):
        return
    kill_cgroup(top)
    for directory, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
        remove_cgroup(directory)


@pytest.mark.parametrize("killed", ["boxd", "shims"])
def test_commands_run_after_a_cgroup_kill(boxd_factory, killed):
    """Once a cgroup was killed (cgroup.kill), kernels with the kill-sequence
    check kill at birth a child cloned with CLONE_INTO_CGROUP from a cgroup
    whose kill count differs from the destination's: boxd's cgroup killed,
    then boxd restarted in it (its shims' cgroup was not), or the shims'
    cgroup killed under a running boxd. Commands run all the same."""
    mount = cgroup2_mount()
    if not mount or not os.access(mount, os.W_OK):
        pytest.skip("no writable cgroup2 mount")
    tag = uuid.uuid4().hex[:8]
    own, name = f"{mount}/boxd-test-unit-{tag}", f"/boxd-test-commands-{tag}"
    commands = mount + name
    os.mkdir(own)
    os.mkdir(commands)
    instance = boxd_factory("--commands-cgroup", name, start=False)
    # Started in a cgroup of its own, as systemd starts it in its unit's.
    instance.args = (lambda *extra, original=instance.args:
                     ["sh", "-c", f'echo $$ > {own}/cgroup.procs && exec "$@"', "sh",
                      *original(*extra)])
    try:
        instance.start()
        assert ok(instance, "echo before")["stdout"] == "before\n"
        if killed == "boxd":
            kill_cgroup(own)
            instance.proc.wait(timeout=10)
            instance.start()
        else:
            kill_cgroup(os.path.join(commands, "shims"))
        for i in range(3):
            body = ok(instance, f"echo {i}; exit {i}", timeoutSec=20)
            assert body["stdout"] == f"{i}\n" and body["exitCode"] == i, body
        job = start_bg(instance, "echo in the background")
        assert wait_exited(instance, job)["exitCode"] == 0
        assert instance.proc.poll() is None
    finally:
        instance.stop()
        # Spares killed with their shims' cgroup left theirs (the next
        # boxd's adoption removes them): the whole tree goes here first.
        remove_tree(commands)
        cleanup(instance)
        remove_tree(own)
