"""A command that freezes the shims (cgroup v2's freezer): one write of 1 to
the shims' cgroup.freeze, or to the commands' cgroup above it, used to stop
every timeout and every new command while health stayed green. boxd thaws
them at once (the kernel tells it through cgroup.events): commands start
and time out as ever."""
import os
import socket
import time
import uuid

import pytest

from conftest import wait_for
from exec_helpers import box, cleanup, ok, run  # noqa: F401
from test_cgroups import cgroup2_mount, own_cgroup2


def commands_cgroup(boxd):
    """The commands' cgroup v2 dir, from where a command runs."""
    mount = cgroup2_mount()
    if not mount or not os.access(mount, os.W_OK):
        pytest.skip("no writable cgroup2 mount")
    status, job = run(boxd, "sleep 30", background=True)
    assert status == 200, job
    home = wait_for(lambda: own_cgroup2(job["pid"]), what="the job's cgroup")
    run(boxd, f"kill {job['pid']}")
    return mount + os.path.dirname(home)


def freeze_file(dir):
    return os.path.join(dir, "cgroup.freeze")


@pytest.mark.parametrize("target", ["shims", "."])
def test_a_frozen_shims_cgroup_is_thawed(box, target):
    base = commands_cgroup(box)
    victim = os.path.normpath(os.path.join(base, target))
    # The command freezes it (and is frozen with it when it is the commands'
    # cgroup), as a hostile or careless command would.
    status, result = run(box, f"echo 1 > {freeze_file(victim)}", timeout=30)
    assert status == 200, result
    wait_for(lambda: open(freeze_file(victim)).read().strip() == "0", timeout=5,
             what=f"{victim} thawed")
    assert "was frozen" in box.log() and "thawed" in box.log()
    # Commands still start, and their timeouts still end them on time.
    started = time.monotonic()
    for _ in range(3):
        assert ok(box, "echo alive")["stdout"] == "alive\n"
        result = ok(box, "sleep 30", timeoutSec=2)
        assert result["timedOut"] is True and result["exitCode"] == 124, result
    assert time.monotonic() - started < 30
    events = open(os.path.join(base, "shims", "cgroup.events")).read()
    assert "frozen 0" in events, events


def test_a_freeze_from_before_the_start_is_undone_at_the_start(box):
    base = commands_cgroup(box)
    shims = os.path.join(base, "shims")
    box.stop()
    with open(freeze_file(shims), "w") as f:
        f.write("1")
    try:
        box.start()
        assert open(freeze_file(shims)).read().strip() == "0"
        assert ok(box, "echo after", timeoutSec=5)["stdout"] == "after\n"
    finally:
        with open(freeze_file(shims), "w") as f:
            f.write("0")


def test_boxd_moved_by_a_command_goes_back_home(boxd_factory, tmp_path):
    """A command moves boxd into a cgroup of its own making (where it could
    freeze or kill it): at the next watchdog ping boxd is back where it
    started (under systemd; here the test plays systemd's notify socket)."""
    mount = cgroup2_mount()
    if not mount or not os.access(mount, os.W_OK):
        pytest.skip("no writable cgroup2 mount")
    path = str(tmp_path / "notify.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(path)
    instance = boxd_factory(start=False)
    instance.env.update(NOTIFY_SOCKET=path, WATCHDOG_USEC="400000")
    instance.start()
    trap = None
    try:
        home = own_cgroup2(instance.proc.pid)
        # Outside the command's own cgroup: its shim rescues what it finds
        # below that one when the command ends; this only boxd can undo.
        trap = f"{mount}/boxd-test-away-{uuid.uuid4().hex[:8]}"
        status, result = run(instance, f"mkdir -p {trap} && echo {instance.proc.pid} > {trap}/cgroup.procs"
                             f" && cat /proc/{instance.proc.pid}/cgroup", timeout=30)
        assert status == 200 and result["exitCode"] == 0, result
        assert trap[len(mount):] in result["stdout"], result
        wait_for(lambda: own_cgroup2(instance.proc.pid) == home, timeout=5, what="boxd back home")
        assert "had been moved" in instance.log()
        assert ok(instance, "echo fine")["stdout"] == "fine\n"
    finally:
        instance.stop()
        cleanup(instance)
        listener.close()
        if trap and os.path.isdir(trap):
            os.rmdir(trap)
