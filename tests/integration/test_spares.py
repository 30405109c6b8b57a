"""Spare shims (boxd/exec/exec-spawn.c, shims/shim-prepare.c): boxd keeps shims
started ahead, each with the state dir, log and cgroups of the id reserved
for it made already. A command takes one, never shared; one killed, or whose
cgroup is removed, changes nothing for the commands; they leave nothing
behind. And a shim started the way a boxd from before the spares did (a
package upgrade replaces the binary under a running boxd) still works."""
import glob
import os
import signal
import subprocess
import threading
import time

import pytest

from conftest import BUILD_DIR, wait_for
from exec_helpers import alive, box, ok, proc, read_fields, run, start_bg, wait_exited  # noqa: F401
from screen_helpers import children_named

SHIM = os.path.join(BUILD_DIR, "shims", "boxd-shim")


def spares(boxd):
    """{pid: id} of the spares of this boxd: `boxd-shim --spare` processes
    holding the meta.tmp of a state dir in its run dir (made ahead, filled
    when a command comes; their seeds hold none of it)."""
    found = {}
    procs_dir = os.path.join(boxd.run_dir, "procs") + "/"
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        pid = int(cmdline.split("/")[2])
        try:
            # Forked by the maker (`--spares`), a spare ends its argv at `--spare`.
            if open(cmdline, "rb").read().rstrip(b"\0").split(b"\0") != [b"boxd-shim", b"--spare"]:
                continue
            targets = [os.readlink(fd) for fd in glob.glob(f"/proc/{pid}/fd/*")]
        except OSError:
            continue
        for target in targets:
            if target.startswith(procs_dir) and target.endswith("/meta.tmp") and alive(pid):
                found[pid] = os.path.basename(os.path.dirname(target))
    return found


def seeds(spare_pid):
    """The seed of a spare: its child, the command's first process forked
    ahead into the command's cgroups (shims/shim-run.c)."""
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = open(stat).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == spare_pid and fields[0] != "Z":
            found.append(int(stat.split("/")[2]))
    return found


def dead(pid):
    """Gone, or a zombie: its files (the seed's socket) are closed."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def two_spares(boxd):
    """Two spares with two ids (a spare forking itself away from boxd is
    briefly two processes holding one id), each listening: a spare opens
    its meta.tmp, then makes its socket."""
    def ready():
        found = spares(boxd)
        if len(found) != 2 or len(set(found.values())) != 2:
            return None
        sockets = (os.path.join(boxd.run_dir, "procs", i, "sock") for i in found.values())
        return found if all(os.path.exists(path) for path in sockets) else None
    return wait_for(ready, timeout=10, what="two spare shims")


def parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def maker(boxd):
    """The pid of this boxd's spare maker (`boxd-shim --spares`, its child),
    or None."""
    for pid in children_named(boxd.proc.pid, "boxd-shim"):
        try:
            if open(f"/proc/{pid}/cmdline", "rb").read() == b"boxd-shim\0--spares\0":
                return pid
        except OSError:
            continue
    return None


def cgroup_base(boxd):
    """Where this boxd's commands' cgroups go (None: no cgroup here)."""
    bg = start_bg(boxd, "sleep 30")
    meta = read_fields(os.path.join(boxd.run_dir, "procs", bg, "meta"))
    boxd.call("POST", f"/v1/procs/{bg}/stop", {"signal": "SIGKILL", "graceSec": 0})
    wait_exited(boxd, bg)
    return {key: os.path.dirname(meta[key]) for key in ("cgroup", "pidsCgroup") if meta.get(key)}


def test_spares_wait_with_their_ids_made(box):
    ready = two_spares(box)
    ids = sorted(ready.values())
    assert all(i.startswith("c_") and len(i) == 18 for i in ids) and ids[0] != ids[1], ids
    for spare_id in ids:
        state = os.path.join(box.run_dir, "procs", spare_id)
        assert os.path.exists(os.path.join(state, "sock"))
        # Nothing in the work dir, the user's, for a command that may not come.
        assert not os.path.exists(os.path.join(box.work_dir, ".sbx", "logs", spare_id + ".log"))
    # Listed nowhere: a spare is not a command.
    assert all(not p["bgId"].endswith(ids[0][2:]) for p in box.call("GET", "/v1/procs")[1]["procs"])


def test_a_command_takes_a_spares_id_and_the_pool_refills(box):
    ready = two_spares(box)
    body = ok(box, "echo $PPID")
    assert body["id"] in ready.values(), (body["id"], ready)
    # The shell's parent is the spare that was waiting for it.
    shim = int(body["stdout"])
    assert shim in ready and ready[shim] == body["id"]
    again = two_spares(box)
    assert shim not in again, "the pool did not make a new spare"
    # A background command takes one under its own prefix.
    bg = start_bg(box, "true")
    assert bg.startswith("b_") and "c_" + bg[2:] in again.values(), (bg, again)
    assert wait_exited(box, bg)["exitCode"] == 0


def test_killed_spares_are_replaced_and_commands_still_run(box):
    ready = two_spares(box)
    for pid in ready:
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not any(alive(pid) for pid in ready), what="the spares to die")
    # Right away, whatever the pool has noticed yet.
    for i in range(3):
        body = ok(box, f"echo run {i}")
        assert body["exitCode"] == 0 and body["stdout"] == f"run {i}\n", body
    again = two_spares(box)
    assert not set(again) & set(ready)
    # What the killed ones had made is removed by the next start of boxd.
    box.stop()
    box.start()
    for spare_id in ready.values():
        assert not os.path.exists(os.path.join(box.run_dir, "procs", spare_id))
        assert not os.path.exists(os.path.join(box.work_dir, ".sbx", "logs", spare_id + ".log"))


def test_spares_are_forked_by_the_maker_out_of_a_commands_reach(box):
    ready = two_spares(box)
    made_by = maker(box)
    assert made_by and all(parent(pid) == made_by for pid in ready), (made_by, ready)
    body = ok(box, f"kill -9 {made_by}; echo $?; kill -TERM -{made_by}; echo $?")
    assert body["stdout"] == "1\n1\n", body
    assert alive(made_by)


def test_a_killed_maker_changes_nothing_for_the_commands(box):
    """Spares start as programs of their own until the maker is made again
    (5 s after it ended, at the next spare's start)."""
    two_spares(box)
    first = maker(box)
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: not alive(first), what="the maker to die")
    for i in range(4):
        assert ok(box, f"echo run {i}")["stdout"] == f"run {i}\n"
    ready = two_spares(box)
    assert maker(box) is None and not any(parent(pid) == first for pid in ready)
    assert "the spare maker" in box.log()
    time.sleep(5.2)
    for i in range(3):
        assert ok(box, f"echo again {i}")["stdout"] == f"again {i}\n"
    second = wait_for(lambda: maker(box), what="a new maker")
    assert second != first
    wait_for(lambda: (lambda s: s if len(s) == 2 and all(parent(p) == second for p in s)
                      else None)(spares(box)), what="spares forked by the new maker")


def test_a_spare_whose_cgroup_was_removed_still_confines_its_command(box):
    bases = cgroup_base(box)
    if "cgroup" not in bases:
        import pytest
        pytest.skip("no cgroup v2 for commands here")
    ready = two_spares(box)
    # Its seed first (a cgroup with a process in it cannot be removed).
    for pid in ready:
        wait_for(lambda: seeds(pid), what="the spare's seed")
        for seed in seeds(pid):
            os.kill(seed, signal.SIGKILL)
    for spare_id in ready.values():
        wait_for(lambda: _removed(os.path.join(bases["cgroup"], spare_id)),
                 what="the spare's cgroup to be removed")
    body = ok(box, "sed -n 's/^0:://p' /proc/self/cgroup")
    assert body["stdout"].strip().endswith("/" + body["id"]), body
    # Its tree is still reachable by a timeout through that cgroup.
    body = ok(box, "setsid sleep 60 & sleep 60", timeoutSec=1)
    assert body["timedOut"] is True


def _removed(path):
    try:
        os.rmdir(path)
        return True
    except OSError:
        return False


def test_a_killed_seed_changes_nothing_for_the_command(box):
    # Two spares, each with its seed (asked afresh: a spare may be replaced
    # meanwhile, its successor seeded a moment later).
    ready = wait_for(lambda: (lambda s: s if len(s) == 2 and len(set(s.values())) == 2 and
                              all(seeds(p) for p in s) else None)(spares(box)),
                     what="two spares with their seeds")
    killed = []
    for pid in ready:
        for seed in seeds(pid):
            os.kill(seed, signal.SIGKILL)
            killed.append(seed)
    # Killed while waiting, not at the very moment its command comes (that
    # command is reported killed): dead, its sockets closed, before the
    # commands come (its shim reaps it only once it wakes for a command).
    wait_for(lambda: all(dead(seed) for seed in killed), what="the killed seeds dead")
    for i in range(3):
        body = ok(box, f"echo $$ $PPID; exit {i}")
        assert body["exitCode"] == i and len(body["stdout"].split()) == 2, body
    # The seeds of the spares made since run them: their shell is the seed.
    again = wait_for(lambda: (lambda s: s if len(s) == 2 and len(set(s.values())) == 2 and
                              all(seeds(p) for p in s) else None)(spares(box)),
                     what="two new spares with their seeds")
    seeded = {pid: seeds(pid)[0] for pid in again}
    body = ok(box, "echo $$ $PPID")
    shell, parent = map(int, body["stdout"].split())
    assert parent in seeded and seeded[parent] == shell, (body, seeded)


def plant_at_future_logs(box, plant):
    """Calls plant(path) at the log path of each spare's id: what a command
    that reads the run dir can do before the next commands come."""
    logs = os.path.join(box.work_dir, ".sbx", "logs")
    os.makedirs(logs, exist_ok=True)
    ids = set(two_spares(box).values())
    for spare_id in ids:
        plant(os.path.join(logs, f"{spare_id}.log"))
    return ids, logs


def test_a_hard_link_at_a_future_log_path_is_not_written_through(box, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    ids, logs = plant_at_future_logs(box, lambda path: os.link(victim, path))
    body = ok(box, "echo hello")
    assert body["id"] in ids, (body, ids)
    assert victim.read_text() == "keep me\n" and os.stat(victim).st_nlink == 2
    with open(os.path.join(logs, f"{body['id']}.log")) as f:
        assert f.read() == "hello\n"


def test_a_fifo_at_a_future_log_path_does_not_hold_the_command(box):
    ids, logs = plant_at_future_logs(box, os.mkfifo)
    status, body = run(box, "echo hello", timeoutSec=3, timeout=20)
    assert status == 200 and body["exitCode"] == 0 and body["stdout"] == "hello\n", body
    assert body["id"] in ids, (body, ids)
    with open(os.path.join(logs, f"{body['id']}.log")) as f:
        assert f.read() == "hello\n"


def seed_cgroup(seed):
    with open(f"/proc/{seed}/cgroup") as f:
        path = [line[3:] for line in f.read().splitlines() if line.startswith("0::")][0]
    with open("/proc/self/mountinfo") as f:
        mount = [line.split()[4] for line in f if " - cgroup2 " in line][0]
    return mount + path


def hold_seeds(box, how):
    """Every waiting seed stopped (SIGSTOP) or its cgroup frozen, as another
    command can do; returns the cgroups frozen."""
    ready = wait_for(lambda: (lambda s: s if len(s) == 2 and len(set(s.values())) == 2 and
                              all(seeds(p) for p in s) else None)(spares(box)),
                     what="two spares with their seeds")
    frozen = []
    for seed in [seed for pid in ready for seed in seeds(pid)]:
        if how == "stop":
            os.kill(seed, signal.SIGSTOP)
            continue
        frozen.append(seed_cgroup(seed))
        with open(os.path.join(frozen[-1], "cgroup.freeze"), "w") as f:
            f.write("1")
    for cgroup in frozen:
        wait_for(lambda: "frozen 1" in open(os.path.join(cgroup, "cgroup.events")).read(),
                 what=f"{cgroup} frozen")
    return frozen


@pytest.mark.parametrize("how", ["stop", "freeze"])
def test_seeds_held_by_another_command_do_not_hold_the_commands(box, how):
    """A seed stopped or frozen while it waits: the shim lets it go (SIGCONT,
    a thaw) and the command runs, its timeout armed, well within it."""
    frozen = []
    try:
        for i in range(3):
            frozen += hold_seeds(box, how)
            begun = time.monotonic()
            status, body = run(box, f"echo {i}; exit {i}", timeoutSec=3, timeout=15)
            took = time.monotonic() - begun
            assert status == 200 and body["stdout"] == f"{i}\n" and body["exitCode"] == i, body
            assert body["timedOut"] is False and took < 3, (took, body)
    finally:
        for cgroup in frozen:
            try:
                with open(os.path.join(cgroup, "cgroup.freeze"), "w") as f:
                    f.write("0")
            except OSError:
                pass


def test_waiting_seeds_are_out_of_other_commands_reach_and_a_command_may_signal_itself(box):
    ready = wait_for(lambda: (lambda s: s if len(s) == 2 and len(set(s.values())) == 2 and
                              all(seeds(p) for p in s) else None)(spares(box)),
                     what="two spares with their seeds")
    waiting = [seed for pid in ready for seed in seeds(pid)]
    # One of them is this command's own shell by now: not that one.
    body = ok(box, " ".join(f"[ {seed} = $$ ] || {{ kill -STOP {seed}; echo $?; }};"
                            for seed in waiting), timeoutSec=10)
    assert body["stdout"] == "1\n" * (len(waiting) - 1), body
    still = [seed for seed in waiting if alive(seed)]
    assert len(still) == len(waiting) - 1, (still, waiting)
    assert all(open(f"/proc/{seed}/stat").read().rsplit(")", 1)[1].split()[0] != "T"
               for seed in still)
    # Its own shell, the seed a moment ago, is the command's to signal.
    assert ok(box, "kill -TERM $$; sleep 5")["exitCode"] == 143


def test_a_traced_seed_is_replaced_and_its_command_runs_once(box):
    """A seed held in a ptrace stop (SIGCONT does nothing to that): at the
    start's bound its shim kills it, and since it never exec'd the command
    runs in a fresh fork, once."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    ready = wait_for(lambda: (lambda s: s if len(s) == 2 and len(set(s.values())) == 2 and
                              all(seeds(p) for p in s) else None)(spares(box)),
                     what="two spares with their seeds")
    traced = [seed for pid in ready for seed in seeds(pid)]
    for seed in traced:
        assert libc.ptrace(0x4206, seed, 0, 0) == 0, ctypes.get_errno()  # PTRACE_SEIZE
        assert libc.ptrace(0x4207, seed, 0, 0) == 0, ctypes.get_errno()  # PTRACE_INTERRUPT
    marker = box.work_dir + "/ran"
    try:
        begun = time.monotonic()
        status, body = run(box, f"echo once >> {marker}; echo ran", timeoutSec=3, timeout=30)
        took = time.monotonic() - begun
        assert status == 200 and body["stdout"] == "ran\n" and body["exitCode"] == 0, body
        assert 4 < took < 5 + 4, took
        with open(marker) as f:
            assert f.read() == "once\n"
    finally:
        for seed in traced:
            libc.ptrace(17, seed, 0, 0)  # PTRACE_DETACH (a stopped one)
            try:
                os.waitpid(seed, os.WNOHANG | 0x40000000)  # __WALL: a killed one
            except ChildProcessError:
                pass


def test_concurrent_commands_never_share_a_spare(box):
    two_spares(box)
    results = [None] * 6

    def run(i):
        results[i] = box.call("POST", "/v1/exec", {"cmd": "echo $PPID; sleep 0.5"})

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(status == 200 and body["exitCode"] == 0 for status, body in results), results
    ids = [body["id"] for _, body in results]
    shims = [body["stdout"] for _, body in results]
    assert len(set(ids)) == len(ids) and len(set(shims)) == len(shims), results


def test_a_small_result_survives_a_restart_of_boxd(box):
    """A foreground result reaches boxd in the exit notice first; the exit
    file, written just after, gives the same answer to the next boxd."""
    small = ok(box, "echo small; echo err >&2; exit 4")
    big = ok(box, "head -c 300000 /dev/zero | tr '\\0' x", maxOutputBytes=1 << 20)
    assert len(big["stdout"]) == 300000
    box.stop()
    box.start()
    for before in (small, big):
        status, after = box.call("GET", f"/v1/exec/{before['id']}")
        assert status == 200
        for key in ("exitCode", "stdout", "stderr", "truncated", "startedAt", "durationMs"):
            assert after[key] == before[key], (key, after[key], before[key])


def _spare_leftovers(boxd, ids):
    left = []
    for spare_id in ids:
        left += glob.glob(os.path.join(boxd.run_dir, "procs", spare_id))
        left += glob.glob(os.path.join(boxd.work_dir, ".sbx", "logs", spare_id + ".log"))
        left += glob.glob(f"/sys/fs/cgroup/**/{spare_id}", recursive=True)
    return left


def test_spares_leave_nothing_behind(boxd_factory):
    for how in (signal.SIGTERM, signal.SIGKILL):
        instance = boxd_factory()
        ready = two_spares(instance)
        made_by = maker(instance)
        instance.kill(how)
        wait_for(lambda: not any(alive(pid) for pid in list(ready) + [made_by]),
                 what="the spares and their maker to leave")
        assert _spare_leftovers(instance, ready.values()) == [], how


def _fields(**values):
    out = b""
    for key, value in values.items():
        for item in value if isinstance(value, list) else [value]:
            data = item if isinstance(item, bytes) else str(item).encode()
            out += key.encode() + b" %d\n" % len(data) + data + b"\n"
    return out


def test_a_shim_started_the_old_way_still_works(tmp_path):
    """A boxd from before the spares starts `boxd-shim` with the spec on its
    stdin, reads one line on its stdout and the record and captures from
    files."""
    state = tmp_path / "procs" / "c_00000000000000aa"
    os.makedirs(state)
    log = tmp_path / "logs" / "c_00000000000000aa.log"
    spec = _fields(id="c_00000000000000aa", cmd="echo old way; echo err >&2; exit 5",
                   cwd=str(tmp_path), user="root", uid=os.getuid(), gid=os.getgid(),
                   env=["PATH=/usr/bin:/bin"], timeoutMs=10000, maxOutputBytes=4096,
                   background=0, holdOutput=0, stateDir=str(state), logPath=str(log),
                   logCapBytes=1 << 20, pidsMax=0, memoryMax=0)
    spec_path = tmp_path / "spec"
    spec_path.write_bytes(spec)
    with open(spec_path, "rb") as stdin:
        shim = subprocess.Popen([SHIM], stdin=stdin, stdout=subprocess.PIPE)
        line = shim.stdout.readline().decode()
        shim.wait(timeout=10)
    assert line.startswith("ready "), line
    wait_for(lambda: os.path.exists(state / "exit"), what="the exit record")
    record = read_fields(state / "exit")
    assert record["exitCode"] == "5" and "stdout" not in record
    assert (state / "stdout").read_text() == "old way\n"
    assert (state / "stderr").read_text() == "err\n"
    assert log.read_text() in ("old way\nerr\n", "err\nold way\n")


def test_spares_serve_without_cgroups(boxd_factory):
    """With no cgroups (`--cgroup off`, or a tree with none mounted, as in
    the package test's chroot) a spare's prepared settings have no cgroup
    either: commands still go through their seed."""
    boxd = boxd_factory("--cgroup", "off")
    ready = two_spares(boxd)
    body = ok(boxd, "echo $PPID")
    assert body["stdout"].strip().isdigit() and int(body["stdout"]) in ready, (body, ready)
    bg = start_bg(boxd, "echo background")
    assert wait_exited(boxd, bg)["exitCode"] == 0
