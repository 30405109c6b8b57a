"""/v1/procs and boxctl exec / procs: background commands, their logs, stops,
and shims that die."""
import json
import os
import signal
import time

from conftest import assert_error, wait_for
from exec_helpers import (alive, box, ok, proc, read_fields, run, shim_states, start_bg,
                          wait_exited)


def test_background_lifecycle(box):
    bg_id = start_bg(box, "echo one; sleep 0.3; echo two; exit 5", note="bg note")
    assert bg_id.startswith("b_")
    procs = box.call("GET", "/v1/procs")[1]["procs"]
    assert [p["bgId"] for p in procs] == [bg_id]
    p = wait_exited(box, bg_id)
    assert p["exitCode"] == 5 and p["signal"] is None and p["timedOut"] is False
    assert p["cmd"].startswith("echo one") and p["cwd"] == box.work_dir
    assert p["endedAt"] >= p["startedAt"] and p["logBytes"] == 8
    assert open(p["logPath"]).read() == "one\ntwo\n"
    health = box.call("GET", "/v1/health")[1]
    assert health["procs"]["running"] == 0
    steps = box.call("GET", "/v1/steps")[1]["steps"]
    assert any(s["kind"] == "bg" and bg_id in s["summary"] for s in steps)


def test_the_list_stays_small_with_many_kept_procs(box):
    """100 ended procs, each with the longest note (4 KiB), and 100
    foreground results beside them: the list is the procs' own size, about
    5 KB each, and comes at once (with 15 MiB notes, 5 procs made 78 MB)."""
    note = "n" * 4096
    ids = [start_bg(box, f"exit {i % 7}", note=note) for i in range(100)]
    for _ in range(100):
        ok(box, "true")
    wait_exited(box, ids[-1])
    started = time.monotonic()
    listed = box.request("GET", "/v1/procs")
    took = time.monotonic() - started
    procs = json.loads(listed.body)["procs"]
    assert [p["bgId"] for p in procs] == ids
    assert all(p["note"] == note for p in procs)
    assert len(listed.body) < 100 * 5000, len(listed.body)
    assert took < 1, took


def test_foreground_ids_are_not_procs(box):
    body = ok(box, "true")
    assert_error(box.call("GET", f"/v1/procs/{body['id']}"), 404, "not_found")
    assert_error(box.call("GET", "/v1/procs/b_unknown"), 404, "not_found")


def test_wait_times_out_then_returns(box):
    bg_id = start_bg(box, "sleep 1.5")
    assert box.call("GET", "/v1/health")[1]["procs"]["running"] == 1
    status, body = box.call("POST", f"/v1/procs/{bg_id}/wait", {"timeoutSec": 0.2})
    assert status == 200 and body["waitTimedOut"] is True and body["state"] == "running"
    status, body = box.call("POST", f"/v1/procs/{bg_id}/wait", {"timeoutSec": 30})
    assert status == 200 and body["state"] == "exited" and "waitTimedOut" not in body
    status, body = box.call("POST", f"/v1/procs/{bg_id}/wait", {"timeoutSec": -1})
    assert_error((status, body), 400, "bad_request")


def test_stop_whole_tree_with_grace(box):
    # The trap comes first: the pid in the log then says it is in place.
    bg_id = start_bg(box, "trap '' TERM; setsid sleep 100 & echo $!; sleep 100")
    wait_for(lambda: proc(box, bg_id)["logBytes"] > 0, what="the child pid in the log")
    child = int(open(proc(box, bg_id)["logPath"]).read())
    status, body = box.call("POST", f"/v1/procs/{bg_id}/stop", {"signal": "SIGTERM", "graceSec": 1})
    assert status == 200 and body["state"] == "exited" and body["signal"] == "SIGKILL"
    wait_for(lambda: not alive(child), what="the setsid child to end")
    status, body = box.call("POST", f"/v1/procs/{bg_id}/stop", {"signal": "NOPE"})
    assert_error((status, body), 400, "bad_request")


def test_stop_with_default_signal_and_delete(box):
    bg_id = start_bg(box, "sleep 100")
    assert_error(box.call("DELETE", f"/v1/procs/{bg_id}"), 409, "conflict")
    status, body = box.call("POST", f"/v1/procs/{bg_id}/stop")
    assert status == 200 and body["signal"] == "SIGTERM" and body["exitCode"] == 143
    log_path = body["logPath"]
    assert box.call("DELETE", f"/v1/procs/{bg_id}")[0] == 200
    assert_error(box.call("GET", f"/v1/procs/{bg_id}"), 404, "not_found")
    assert os.path.exists(log_path)


def test_log_tail_offset_and_size(box):
    bg_id = start_bg(box, "for i in $(seq 1 100); do echo line $i; done")
    p = wait_exited(box, bg_id)
    response = box.request("GET", f"/v1/procs/{bg_id}/log?tail=3")
    assert response.status == 200 and response.body == b"line 98\nline 99\nline 100\n"
    assert int(response.headers["x-log-size"]) == p["logBytes"]
    assert response.headers["content-type"].startswith("text/plain")
    response = box.request("GET", f"/v1/procs/{bg_id}/log?offset=7&limit=7")
    assert response.body == b"line 2\n" and response.headers["x-log-next-offset"] == "14"
    assert box.request("GET", f"/v1/procs/{bg_id}/log?tail=-1").status == 400
    assert box.request("GET", f"/v1/procs/{bg_id}/log?offset=x").status == 400
    response = box.request("GET", f"/v1/procs/{bg_id}/log?offset=99999")
    assert response.status == 200 and response.body == b""


def test_a_fifo_in_place_of_a_log_does_not_hold_boxd(box):
    """The logs are in the work dir, the commands': one replaced by a FIFO
    is no log, and boxd's loop never waits on it."""
    bg_id = start_bg(box, "echo one")
    path = wait_exited(box, bg_id)["logPath"]
    os.unlink(path)
    os.mkfifo(path)
    response = box.request("GET", f"/v1/procs/{bg_id}/log?tail=3", timeout=10)
    assert response.status != 200, response
    assert box.call("GET", "/v1/health", timeout=10)[0] == 200


def test_shim_killed_from_outside_is_reported(box):
    bg_id = start_bg(box, "setsid sleep 200 & echo $!; sleep 200")
    wait_for(lambda: proc(box, bg_id)["logBytes"] > 0, what="the child pid in the log")
    child = int(open(proc(box, bg_id)["logPath"]).read())
    state = [s for s in shim_states(box) if s["id"] == bg_id][0]
    os.kill(int(state["shimPid"]), signal.SIGKILL)
    p = wait_exited(box, bg_id, timeout=10)
    assert p["signal"] == "SIGKILL" and "shim" in p["message"]
    if state.get("cgroup") or state.get("pidsCgroup"):
        wait_for(lambda: not alive(child), what="the orphaned tree to be stopped")


def test_shim_killed_while_boxd_is_down(box):
    bg_id = start_bg(box, "sleep 200")
    state = [s for s in shim_states(box) if s["id"] == bg_id][0]
    box.kill(signal.SIGKILL)
    os.kill(int(state["shimPid"]), signal.SIGKILL)
    wait_for(lambda: not alive(int(state["shimPid"])), what="the shim to die")
    box.start()
    p = proc(box, bg_id)
    assert p["state"] == "exited" and p["signal"] == "SIGKILL" and p["message"]


def test_exit_record_that_cannot_be_written_still_gives_the_end(box):
    # A directory where the shim writes its record's temporary file makes
    # the write fail as a full disk would.
    bg_id = start_bg(box, "sleep 0.5; exit 3")
    blocker = os.path.join(box.run_dir, "procs", bg_id, "exit.tmp")
    os.mkdir(blocker)
    try:
        p = wait_exited(box, bg_id)
        assert p["exitCode"] == 3 and p["signal"] is None
        assert "could not be written" in p["message"] and "killed" not in p["message"]
    finally:
        os.rmdir(blocker)


def test_state_dirs_of_shims_that_never_started_are_removed(box):
    box.stop()
    for name in ("c_0123456789abcdef", "b_0123456789abcdef"):
        state = os.path.join(box.run_dir, "procs", name)
        os.makedirs(state)
        for leftover in ("meta", "meta.tmp", "exit.tmp", "stdout.tmp", "sock"):
            with open(os.path.join(state, leftover), "w") as f:
                f.write("not a shim's meta" if leftover == "meta" else "")
    box.start()
    left = os.listdir(os.path.join(box.run_dir, "procs"))
    assert "c_0123456789abcdef" not in left and "b_0123456789abcdef" not in left, left
    # What is there now is the new spares' (docs/exec.md): made ahead, no meta yet.
    assert all(not os.path.exists(os.path.join(box.run_dir, "procs", name, "meta"))
               for name in left), left


def test_restart_keeps_procs_and_their_logs(box):
    bg_id = start_bg(box, "echo before; sleep 1.5; echo after")
    wait_for(lambda: proc(box, bg_id)["logBytes"] > 0, what="first output")
    box.stop()
    box.start()
    p = wait_exited(box, bg_id)
    assert p["exitCode"] == 0 and open(p["logPath"]).read() == "before\nafter\n"


def test_boxctl_exec_streams_and_exits_with_status(box):
    out = box.boxctl("exec", "--env", "A=b", "--", "echo $A; echo e >&2; exit 9")
    assert out.returncode == 9 and out.stdout == b"b\n" and out.stderr == b"e\n"
    out = box.boxctl("exec", "--json", "--", "echo hi")
    assert out.returncode == 0 and json.loads(out.stdout)["stdout"] == "hi\n"
    out = box.boxctl("exec", "--cwd", "/no/such", "--", "true")
    assert out.returncode == 1 and b"does not exist" in out.stderr
    out = box.boxctl("exec", "--timeout", "1", "--", "sleep 10")
    assert out.returncode == 124 and b"timed out" in out.stderr
    assert box.boxctl("exec").returncode == 2


def test_boxctl_procs(box):
    out = box.boxctl("exec", "--bg", "--", "echo hello; sleep 0.5; echo bye")
    assert out.returncode == 0
    bg_id = out.stdout.split()[0].decode()
    out = box.boxctl("procs", "log", bg_id, "--follow")
    assert out.returncode == 0 and out.stdout == b"hello\nbye\n"
    out = box.boxctl("procs", "wait", bg_id, "--timeout", "10")
    assert out.returncode == 0 and b"exit 0" in out.stdout
    out = box.boxctl("procs")
    assert bg_id.encode() in out.stdout
    out = box.boxctl("--json", "procs", "show", bg_id)
    assert json.loads(out.stdout)["bgId"] == bg_id
    out = box.boxctl("procs", "log", bg_id, "--tail", "1")
    assert out.stdout == b"bye\n"
    sleeper = box.boxctl("exec", "--bg", "--", "sleep 100").stdout.split()[0].decode()
    out = box.boxctl("procs", "stop", sleeper)
    assert out.returncode == 0 and b"SIGTERM" in out.stdout
    assert box.boxctl("procs", "show", "b_nope").returncode == 1
    assert box.boxctl("procs", "frob", bg_id).returncode == 2
