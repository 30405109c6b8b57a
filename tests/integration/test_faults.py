"""Faults and careless input: what used to break boxd quietly."""
import json
import os

from exec_helpers import files_under


def test_nul_in_cmd_is_refused(boxd):
    body = '{"cmd": "echo a\\u0000; echo b"}'
    response = boxd.request("POST", "/v1/exec", body, headers={"Content-Type": "application/json"})
    assert response.status == 400
    error = response.json()["error"]
    assert error["code"] == "bad_request"
    assert "NUL" in error["message"]


def test_nul_in_env_value_is_refused(boxd):
    body = '{"cmd": "echo $A", "env": {"A": "x\\u0000y"}}'
    response = boxd.request("POST", "/v1/exec", body, headers={"Content-Type": "application/json"})
    assert response.status == 400
    assert response.json()["error"]["code"] == "bad_request"


def test_escaped_backslash_before_u0000_text_is_not_a_nul(boxd):
    # "\\u0000" is a backslash followed by the text u0000: a legal command.
    body = json.dumps({"cmd": "printf '%s\\n' '\\u0000'"})
    status, result = boxd.call("POST", "/v1/exec", json.loads(body))
    assert status == 200, result
    assert result["stdout"] == "\\u0000\n"


def test_a_removed_socket_is_made_again(boxd):
    import os
    from conftest import wait_for
    os.unlink(boxd.socket)
    wait_for(lambda: os.path.exists(boxd.socket), timeout=5, what="the socket to be made again")
    status, health = boxd.call("GET", "/v1/health")
    assert status == 200 and health["ok"] is True
    # Moved away counts as removed too.
    os.rename(boxd.socket, boxd.socket + ".moved")
    wait_for(lambda: os.path.exists(boxd.socket), timeout=5, what="the socket to be made again")
    assert boxd.call("GET", "/v1/health")[0] == 200
    assert "was removed; serving on a new one" in boxd.log()


def test_out_of_fds_rests_the_listener_and_recovers(boxd):
    """At the fd limit the listener neither spins nor floods the log, and
    boxd answers again as soon as fds free up."""
    import socket
    import subprocess
    import time
    pid = boxd.proc.pid
    subprocess.run(["prlimit", "--pid", str(pid), "--nofile=3:"], check=True)
    peers = []
    try:
        for _ in range(20):  # waiting peers keep the listener readable
            peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            peer.settimeout(2)
            peer.connect(boxd.socket)
            peers.append(peer)
        ticks_before = _cpu_ticks(pid)
        time.sleep(2)
        spent = _cpu_ticks(pid) - ticks_before
    finally:
        subprocess.run(["prlimit", "--pid", str(pid), "--nofile=1024:"], check=True)
    for peer in peers:
        peer.close()
    assert spent < 50, f"boxd spent {spent} ticks in 2 s at the fd limit (a spinning listener)"
    warnings = boxd.log().count("out of file descriptors")
    assert warnings == 1, boxd.log()[-2000:]
    assert "Error from accept() call" not in boxd.log()
    assert boxd.call("GET", "/v1/health")[0] == 200


def _cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


# ---- nothing runs twice, across crashes of boxd too ----

def _restart(boxd):
    boxd.kill()
    boxd.log_file.close()
    boxd.start()


def _lines(path):
    import os
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return len(f.read().splitlines())


def test_a_finished_call_replays_after_a_crash(boxd):
    import os
    count = os.path.join(boxd.work_dir, "runs")
    body = {"cmd": f"echo once >> {count}; echo $RANDOM$RANDOM"}
    headers = {"X-Request-Id": "finished-1"}
    first = boxd.request("POST", "/v1/exec", body, headers=headers)
    assert first.status == 200
    _restart(boxd)
    again = boxd.request("POST", "/v1/exec", body, headers=headers)
    assert again.status == 200
    assert again.body == first.body
    assert again.headers.get("x-request-id") == "finished-1"
    assert _lines(count) == 1


def test_a_running_call_is_attached_to_after_a_crash(boxd):
    """The first call's boxd dies while the command runs; the retry of the
    same id, to the next boxd, waits for that command instead of running a
    second one."""
    import os
    import threading
    count = os.path.join(boxd.work_dir, "runs")
    body = {"cmd": f"echo once >> {count}; sleep 2; echo finished"}
    headers = {"X-Request-Id": "running-1"}
    outcome = {}

    def first_call():
        try:
            outcome["first"] = boxd.request("POST", "/v1/exec", body, headers=headers)
        except OSError as error:
            outcome["first"] = error

    thread = threading.Thread(target=first_call)
    thread.start()
    from conftest import wait_for
    wait_for(lambda: _lines(count) == 1, timeout=10, what="the command to start")
    _restart(boxd)
    thread.join(timeout=30)
    assert isinstance(outcome["first"], OSError) or outcome["first"].status != 200
    status, result = boxd.call("POST", "/v1/exec", body, headers=headers)
    assert status == 200, result
    assert result["stdout"] == "finished\n" and result["exitCode"] == 0
    assert _lines(count) == 1
    # And once more: the stored answer now.
    status, again = boxd.call("POST", "/v1/exec", body, headers=headers)
    assert status == 200 and again["id"] == result["id"]
    assert _lines(count) == 1


def test_a_background_call_keeps_its_job_after_a_crash(boxd):
    body = {"cmd": "sleep 30", "background": True}
    headers = {"X-Request-Id": "bg-1"}
    status, first = boxd.call("POST", "/v1/exec", body, headers=headers)
    assert status == 200
    _restart(boxd)
    status, again = boxd.call("POST", "/v1/exec", body, headers=headers)
    assert status == 200 and again["bgId"] == first["bgId"]
    status, procs = boxd.call("GET", "/v1/procs")
    running = [p for p in procs["procs"] if p["state"] == "running"]
    assert [p["bgId"] for p in running] == [first["bgId"]]
    boxd.call("POST", f"/v1/procs/{first['bgId']}/stop", {"graceSec": 0})


def test_every_mutating_route_honours_the_request_id(boxd):
    first = boxd.request("POST", "/v1/uploads", {"dest": "up"}, headers={"X-Request-Id": "up-1"})
    again = boxd.request("POST", "/v1/uploads", {"dest": "up"}, headers={"X-Request-Id": "up-1"})
    assert first.status == again.status
    assert first.body == again.body
    assert again.headers.get("x-request-id") == "up-1"
    for method, path, body in [("PUT", "/v1/secrets", {"secrets": {"TOKEN_A": "value-of-the-token"}}),
                               ("PUT", "/v1/env/web", {"env": {"PORT": "8080"}})]:
        response = boxd.request(method, path, body, headers={"X-Request-Id": f"id-{method}-{path[4:8]}"})
        repeat = boxd.request(method, path, body, headers={"X-Request-Id": f"id-{method}-{path[4:8]}"})
        assert repeat.headers.get("x-request-id"), (path, repeat.headers)
        assert repeat.body == response.body


def test_a_quick_background_command_steps_in_order(boxd):
    """Its "started" step comes before its end, however quickly it ends."""
    for i in range(5):
        status, started = boxd.call("POST", "/v1/exec",
                                    {"cmd": f"exit {i + 3}", "background": True})
        assert status == 200
        boxd.call("POST", f"/v1/procs/{started['bgId']}/wait", {"timeoutSec": 10})
    status, steps = boxd.call("GET", "/v1/steps")
    bg = [s["summary"] for s in steps["steps"] if s["kind"] == "bg"]
    assert len(bg) == 10, bg
    for i in range(5):
        assert bg[2 * i].startswith(f"started exit {i + 3} "), bg
        assert f"exit {i + 3}" in bg[2 * i + 1] and not bg[2 * i + 1].startswith("started"), bg


def test_lost_events_count_exactly_what_was_not_streamed(boxd):
    """A reader that stalls loses output to the stream (the log keeps it);
    the lost events add up, with what was streamed, to the whole output."""
    import json as json_module
    import socket
    import time
    total = 60_000_000
    body = json_module.dumps({"cmd": f"head -c {total} /dev/zero | tr '\\0' a"}).encode()
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.connect(boxd.socket)
    raw.sendall(b"POST /v1/exec HTTP/1.1\r\nHost: x\r\nAccept: application/x-ndjson\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    time.sleep(3)  # stall: the shim goes on, boxd stops taking its output
    raw.settimeout(120)
    data = bytearray()
    while not data.endswith(b"0\r\n\r\n"):
        chunk = raw.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    raw.close()
    head, _, payload = bytes(data).partition(b"\r\n\r\n")
    # De-chunk the body and read its NDJSON events.
    events, rest = [], payload
    text = bytearray()
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        text += rest[:size]
        rest = rest[size + 2:]
    for line in bytes(text).splitlines():
        events.append(json_module.loads(line))
    streamed = sum(len(e["data"].encode()) for e in events if e.get("type") == "stdout")
    lost = [e["bytes"] for e in events if e.get("type") == "lost"]
    assert events[-1]["type"] == "exit" and events[-1]["exitCode"] == 0
    assert lost, "the stalled reader lost nothing: the test did not stall it"
    assert all(0 < n <= total for n in lost), lost
    assert streamed + sum(lost) == total, (streamed, sum(lost))


def test_kept_results_are_bounded_in_bytes(boxd):
    """Ended foreground results live in the run dir (RAM in a box): past
    64 MiB of captured output the oldest go first."""
    import os
    ids = []
    for _ in range(3):
        status, result = boxd.call("POST", "/v1/exec", {
            "cmd": "head -c 30000000 /dev/zero | tr '\\0' a", "maxOutputBytes": 32 << 20},
            timeout=120)
        assert status == 200 and result["exitCode"] == 0
        ids.append(result["id"])
    assert boxd.call("POST", "/v1/exec", {"cmd": "true"})[0] == 200
    assert boxd.call("GET", f"/v1/exec/{ids[0]}")[0] == 404
    assert boxd.call("GET", f"/v1/exec/{ids[2]}")[0] == 200
    procs_dir = os.path.join(boxd.run_dir, "procs")
    total = sum(len(data) for _, data in files_under(procs_dir))
    assert total <= (64 << 20) + (1 << 20), total
    assert not os.path.exists(os.path.join(procs_dir, ids[0]))


# ---- a full disk ----

def _small_tmpfs(path, size="2m"):
    import subprocess
    import pytest
    path.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                      capture_output=True).returncode != 0:
        pytest.fail("cannot mount a small tmpfs here (the tests run as root)")


def _fill(directory):
    import os
    path = os.path.join(directory, "filler")
    # Unbuffered: a buffer left to flush would fail again at the close.
    with open(path, "wb", buffering=0) as f:
        try:
            while f.write(b"\0" * 65536):
                pass
        except OSError:
            pass
    return path


def test_a_full_run_dir_neither_floods_nor_crashes(boxd_factory, tmp_path):
    import os
    import subprocess
    import time
    from conftest import wait_for
    mount = tmp_path / "run"
    _small_tmpfs(mount)
    try:
        box = boxd_factory(start=False)
        box.run_dir = str(mount / "run")
        box.socket = str(mount / "run" / "boxd.sock")
        box.start()
        ids = [box.call("POST", "/v1/exec", {"cmd": "sleep 1; echo done", "background": True})[1]["bgId"]
               for _ in range(3)]
        filler = _fill(str(mount))
        # The command's text fills the run dir: the caller hears the disk is full.
        _disk_full(box.call("POST", "/v1/exec", {"cmd": "echo hi"}), box.run_dir)

        def ended():
            procs = box.call("GET", "/v1/procs")[1]["procs"]
            return all(p["state"] == "exited" for p in procs if p["bgId"] in ids)
        wait_for(ended, timeout=20, what="the jobs to end")
        time.sleep(0.5)
        assert box.proc.poll() is None
        assert box.log().count("without recording an exit") <= len(ids)
        status, health = box.call("GET", "/v1/health")
        assert status == 200
        run_disk = [d for d in health["disks"] if d["path"] == box.run_dir]
        assert run_disk and run_disk[0]["full"] is True, health["disks"]
        # A restart with the run dir still full comes up.
        box.kill()
        box.log_file.close()
        box.start()
        assert box.call("GET", "/v1/health")[0] == 200
        os.unlink(filler)
        status, result = box.call("POST", "/v1/exec", {"cmd": "echo hi"})
        assert status == 200 and result["stdout"] == "hi\n"
        box.stop()
    finally:
        subprocess.run(["umount", "-l", str(mount)])


def _disk_full(result, *named):
    """(status, body) is 507 disk_full, its message naming each of `named`."""
    status, body = result
    assert status == 507 and body["error"]["code"] == "disk_full", (status, body)
    message = body["error"]["message"]
    assert "No space left on device" in message, message
    for name in named:
        assert name in message, (name, message)
    return message


def _archive(name, data):
    import io
    import tarfile
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_caller_bytes_on_a_full_work_dir_are_507_disk_full(boxd_factory, tmp_path):
    """The work dir on a 2 MiB tmpfs. Whatever boxd writes of a caller's bytes
    there answers 507 disk_full naming where (it was a 500 internal, which a
    caller cannot act on): a sync upload (a 4 MB archive, refused mid-body:
    its writer still reads the answer), a resumable piece, a finish, env
    files; the old files stay as they were."""
    import subprocess
    mount = tmp_path / "small"
    _small_tmpfs(mount)
    try:
        box = boxd_factory(start=False)
        box.work_dir = work = str(mount / "work")
        box.start()
        incompressible = _archive("big.bin", os.urandom(4 << 20))
        _disk_full(box.call("POST", "/v1/sync/upload?dest=app", incompressible, timeout=60),
                   f"{work}/app", '"big.bin"')
        assert not os.path.exists(os.path.join(work, "app", "big.bin"))
        # A piece that does not fit: cut back to its offset.
        upload_id = box.call("POST", "/v1/uploads?dest=app")[1]["uploadId"]
        part = f"{work}/.sbx/uploads/{upload_id}.part"
        _disk_full(box.call("PUT", f"/v1/uploads/{upload_id}", incompressible,
                            headers={"Upload-Offset": "0"}, timeout=60), part)
        assert box.request("HEAD", f"/v1/uploads/{upload_id}").headers["upload-offset"] == "0"
        # One that fits and expands past the disk when extracted.
        zeros = _archive("zeros.bin", bytes(4 << 20))
        assert box.call("PUT", f"/v1/uploads/{upload_id}", zeros,
                        headers={"Upload-Offset": "0"})[0] == 200
        _disk_full(box.call("POST", f"/v1/uploads/{upload_id}/finish", timeout=60),
                   f"{work}/app", '"zeros.bin"')
        assert box.call("DELETE", f"/v1/uploads/{upload_id}")[0] == 200
        # Env files, and new uploads, once nothing is left at all.
        assert box.call("PUT", "/v1/env/api", "PORT=1\n")[0] == 200
        filler = _fill(str(mount))
        _disk_full(box.call("PUT", "/v1/env/api", "PORT=2\n" + "X=" + "y" * 100_000 + "\n"),
                   f"{work}/.sbx/env/api.env")
        assert open(os.path.join(work, ".sbx", "env", "api.env")).read() == "PORT=1\n"
        _disk_full(box.call("POST", "/v1/uploads?dest=app"), f"{work}/.sbx/uploads")
        _disk_full(box.call("POST", "/v1/sync/upload?dest=app", zeros, timeout=60), f"{work}/app")
        os.unlink(filler)
        status, answer = box.call("POST", "/v1/sync/upload?dest=app", _archive("ok.txt", b"ok"))
        assert status == 200 and answer["files"] == 1, answer
        box.stop()
    finally:
        subprocess.run(["umount", "-l", str(mount)])


def test_an_init_on_a_full_disk_is_507_disk_full(boxd_factory, tmp_path):
    """The hosts block init writes (--hosts-file here on a full tmpfs)."""
    import subprocess
    mount = tmp_path / "etc"
    _small_tmpfs(mount)
    try:
        hosts = mount / "hosts"
        hosts.write_text("127.0.0.1\tlocalhost\n")
        box = boxd_factory("--hosts-file", str(hosts))
        filler = _fill(str(mount))
        _disk_full(box.call("POST", "/v1/init", {"hosts": {"api": "10.0.0.1"}}), str(hosts))
        assert hosts.read_text() == "127.0.0.1\tlocalhost\n"
        os.unlink(filler)
        assert box.call("POST", "/v1/init", {"hosts": {"api": "10.0.0.1"}})[0] == 200
        box.stop()
    finally:
        subprocess.run(["umount", "-l", str(mount)])


# ---- start-up and health ----

def test_first_health_answer_does_not_wait_for_absent_sockets(boxd_factory):
    """No X socket and no Docker socket: the probes fail at once (they used
    to wait out their 500 ms timeout, and the first answer with them)."""
    import time
    box = boxd_factory("--display", ":64999", start=False)
    started = time.monotonic()
    box.start(wait=False)
    from conftest import wait_for

    def answered():
        try:
            return box.request("GET", "/v1/health", timeout=5)
        except OSError:
            return None
    response = wait_for(answered, timeout=10, interval=0.002, what="the first health answer")
    elapsed = time.monotonic() - started
    assert response.status == 200 and response.json()["display"]["up"] is False
    assert elapsed < 0.4, f"first health answer after {elapsed:.3f} s"


def test_a_display_that_comes_or_goes_shows_in_the_next_answer(boxd_factory, xvfb):
    box = boxd_factory("--display", xvfb.display)
    assert box.call("GET", "/v1/health")[1]["display"]["up"] is True
    xvfb.proc.terminate()  # a clean stop: Xvfb removes its socket
    xvfb.proc.wait()
    assert box.call("GET", "/v1/health")[1]["display"]["up"] is False
    xvfb.start()
    assert box.call("GET", "/v1/health")[1]["display"]["up"] is True
    xvfb.kill()
    assert box.call("GET", "/v1/health")[1]["display"]["up"] is False


def test_background_commands_outlive_a_reboot_in_the_list(boxd):
    """A reboot or power cut empties the run dir (RAM in a box) and ends
    every process; the work dir stays. Background commands from before are
    listed after it: the ended one with its exit, the running one as lost
    (not running, not silently gone). Simulated: every process of the old
    boxd killed, the run dir emptied."""
    import shutil
    import signal as signals
    from exec_helpers import shim_states, wait_exited
    status, ended = boxd.call("POST", "/v1/exec", {"cmd": "echo done; exit 3", "background": True})
    wait_exited(boxd, ended["bgId"])
    status, running = boxd.call("POST", "/v1/exec", {"cmd": "echo working; sleep 300", "background": True})
    assert status == 200
    from conftest import wait_for
    wait_for(lambda: [s for s in shim_states(boxd) if s["id"] == running["bgId"]], what="its shim")
    # Its first output is in the log before the box goes down (a start
    # answers within a millisecond now, before bash has even echoed).
    wait_for(lambda: open(running["logPath"]).read() == "working\n", what="its first output")
    shims = [int(s["shimPid"]) for s in shim_states(boxd)]
    boxd.kill()
    boxd.log_file.close()
    for pid in shims + [int(running["pid"])]:
        try:
            os.kill(pid, signals.SIGKILL)
        except ProcessLookupError:
            pass
    import time
    time.sleep(0.3)
    shutil.rmtree(boxd.run_dir)
    boxd.start()
    procs = {p["bgId"]: p for p in boxd.call("GET", "/v1/procs")[1]["procs"]}
    assert procs[ended["bgId"]]["state"] == "exited" and procs[ended["bgId"]]["exitCode"] == 3
    lost = procs[running["bgId"]]
    assert lost["state"] == "exited" and lost["exitCode"] is None, lost
    assert lost["message"].startswith("lost: the box restarted"), lost
    assert open(lost["logPath"]).read() == "working\n"
    # Forgetting it forgets it for good.
    assert boxd.call("DELETE", f"/v1/procs/{running['bgId']}")[0] == 200
    boxd.kill()
    boxd.log_file.close()
    boxd.start()
    assert running["bgId"] not in [p["bgId"] for p in boxd.call("GET", "/v1/procs")[1]["procs"]]
