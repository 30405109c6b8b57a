"""The transport and the router: bad input of every kind gets a clear error
and boxd stays up."""
import json
import os
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import BOXD, MEMORY_SCALE, wait_for


def raw(instance, data, timeout=10, shutdown=False):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(instance.socket)
    s.sendall(data)
    if shutdown:
        s.shutdown(socket.SHUT_WR)
    chunks = []
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            if b"\r\n\r\n" in b"".join(chunks) and b"Content-Length" in b"".join(chunks):
                head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
                length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                if len(body) >= length:
                    break
    finally:
        s.close()
    return b"".join(chunks)


def error_of(response):
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    return body["error"]["code"], body["error"]["message"]


def test_unknown_route_is_not_found(boxd):
    response = boxd.request("GET", "/v1/nothing-here")
    assert response.status == 404
    assert error_of(response)[0] == "not_found"
    assert "GET /v1/nothing-here" in error_of(response)[1]


def test_wrong_method_names_the_allowed_ones(boxd):
    response = boxd.request("DELETE", "/v1/health")
    assert response.status == 405
    assert response.headers["allow"] == "GET"
    assert error_of(response)[0] == "method_not_allowed"


def test_malformed_json_is_a_bad_request(boxd):
    response = boxd.request("PUT", "/v1/lock", b'{"locked": tru',
                            {"Content-Type": "application/json"})
    assert response.status == 400
    code, message = error_of(response)
    assert code == "bad_request" and "JSON" in message


@pytest.mark.parametrize("body", [b"[1,2]", b'"text"', b"42", b"null"])
def test_json_that_is_not_an_object(boxd, body):
    response = boxd.request("PUT", "/v1/lock", body)
    assert response.status == 400
    assert "object" in error_of(response)[1]


@pytest.mark.parametrize("body", [{"locked": "yes"}, {"locked": 1}, {}, {"locked": True, "note": 5}])
def test_wrong_types_are_named(boxd, body):
    response = boxd.request("PUT", "/v1/lock", body)
    assert response.status == 400
    assert error_of(response)[0] == "bad_request"
    assert "`" in error_of(response)[1]


def test_body_over_the_route_limit_is_413_json(boxd):
    response = boxd.request("PUT", "/v1/lock", b"x" * (2 << 20))
    assert response.status == 413
    assert error_of(response)[0] == "payload_too_large"
    assert boxd.call("GET", "/v1/health")[0] == 200


def test_body_over_the_hard_limit_is_refused_without_buffering(boxd):
    # Declares 100 MB, far past what PUT /v1/lock takes: boxd answers from
    # the head alone and closes, without keeping the body.
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(boxd.socket)
    s.sendall(b"PUT /v1/lock HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
    try:
        s.sendall(b"x" * (4 << 20))
    except OSError:
        pass  # boxd may have closed already
    assert s.recv(100).startswith(b"HTTP/1.1 413")
    s.close()
    rss_kib = int(open(f"/proc/{boxd.proc.pid}/status").read().split("VmHWM:")[1].split()[0])
    assert rss_kib < 16 * 1024 * MEMORY_SCALE
    assert boxd.call("GET", "/v1/health")[0] == 200


def json_error(reply):
    """The contract's error of a raw reply: its status and error object."""
    head, _, body = reply.partition(b"\r\n\r\n")
    assert b"Content-Type: application/json" in head, head
    length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
    assert len(body) == length
    return int(head.split()[1]), json.loads(body)["error"]


def test_malformed_http_is_400_and_boxd_stays_up(boxd):
    for junk in [b"GARBAGE\r\n\r\n", b"GET /v1/health HTTP/1.1\r\nBroken header\r\n\r\n",
                 b"\x00\xff\xfe binary\r\n\r\n", b"GET " + b"a" * 100000 + b" HTTP/1.1\r\n\r\n"]:
        reply = raw(boxd, junk, shutdown=True)
        assert reply == b"" or reply.startswith(b"HTTP/1.1 4"), reply[:100]
        if reply:  # the contract's shape, even for what the connection answers by itself
            status, error = json_error(reply)
            assert status >= 400 and error["code"] and error["message"], reply
    assert boxd.call("GET", "/v1/health")[0] == 200


def test_errors_are_json_after_a_router_answer_too(boxd):
    """On a kept-alive connection: a normal answer goes out as it is, and
    the over-limit request after it still gets the JSON 413, then the close."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(boxd.socket)
    s.sendall(b"GET /v1/steps HTTP/1.1\r\nHost: x\r\n\r\n")
    first = s.recv(65536)
    assert first.startswith(b"HTTP/1.1 200") and b'"steps"' in first
    s.sendall(b"POST /v1/exec HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
              % ((64 << 20) + 1))
    reply = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        reply += chunk
    s.close()
    status, error = json_error(reply)
    assert status == 413 and error["code"] == "payload_too_large" and "/v1/uploads" in error["message"]
    assert b"Connection: close" in reply


def test_percent_escapes_in_the_path(boxd):
    assert boxd.request("GET", "/v1/%zz").status == 400
    assert boxd.request("GET", "/v1/heal%74h").status == 200


def test_a_silent_connection_is_dropped(boxd_factory):
    instance = boxd_factory("--idle-timeout", "1")
    s = socket.socket(socket.AF_UNIX)
    s.connect(instance.socket)
    s.settimeout(10)
    start = time.monotonic()
    assert s.recv(10) == b""
    assert time.monotonic() - start < 5
    # A half-sent head gets 408 once its deadline (here the idle timeout,
    # shorter than the 10 s default) has passed, then the close.
    s = socket.socket(socket.AF_UNIX)
    s.connect(instance.socket)
    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost")
    s.settimeout(10)
    reply = b""
    while chunk := s.recv(4096):
        reply += chunk
    status, error = json_error(reply)
    assert status == 408 and error["code"] == "timeout", reply
    assert instance.call("GET", "/v1/health")[0] == 200


def test_500_concurrent_clients(boxd):
    results = []
    lock = threading.Lock()
    barrier = threading.Barrier(500)

    def client():
        try:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(60)
            s.connect(boxd.socket)
            barrier.wait(timeout=60)
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            s.close()
            ok = data.startswith(b"HTTP/1.1 200") and b'"ok":true' in data
        except Exception as e:  # noqa: BLE001 - counted below
            ok = repr(e)
        with lock:
            results.append(ok)

    threads = [threading.Thread(target=client) for _ in range(500)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 500, [r for r in results if r is not True][:5]
    assert boxd.call("GET", "/v1/health")[0] == 200


def test_keep_alive_serves_many_requests_on_one_connection(boxd):
    s = socket.socket(socket.AF_UNIX)
    s.connect(boxd.socket)
    s.settimeout(10)
    stream = s.makefile("rb")
    for _ in range(50):
        s.sendall(b"GET /v1/steps HTTP/1.1\r\nHost: x\r\n\r\n")
        status = stream.readline()
        assert status.startswith(b"HTTP/1.1 200")
        length = 0
        while True:
            line = stream.readline()
            if line == b"\r\n":
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        assert json.loads(stream.read(length))["steps"] == []
    s.close()


def test_socket_is_private(boxd):
    assert os.stat(boxd.socket).st_mode & 0o777 == 0o600


def test_peer_with_another_uid_is_closed_at_accept(boxd_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root to connect as another uid")
    public = tempfile.mkdtemp(prefix="boxd-peer-")
    os.chmod(public, 0o755)
    boxd = boxd_factory(start=False)
    boxd.socket = os.path.join(public, "boxd.sock")
    boxd.start()
    os.chmod(boxd.socket, 0o666)  # let the kernel admit it, so boxd's own check is what refuses
    code = (
        "import os, socket, sys\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])\n"
        "s.sendall(b'GET /v1/health HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
        "data = s.recv(100)\n"
        "print(repr(data))\n"
    )
    out = subprocess.run(["/usr/bin/python3", "-c", code, boxd.socket], capture_output=True,
                         text=True, timeout=20)
    # Closed before a byte was read: the send fails or the read sees EOF.
    assert out.stdout.strip() == "b''" or "BrokenPipeError" in out.stderr or \
        "ConnectionResetError" in out.stderr, out
    assert "HTTP/1.1" not in out.stdout
    assert "refused a unix socket peer with uid 65534" in boxd.log()
    assert boxd.call("GET", "/v1/health")[0] == 200


def test_second_boxd_on_the_same_socket_refuses(boxd):
    out = subprocess.run([BOXD, "--work-dir", boxd.work_dir, "--run-dir", boxd.run_dir,
                          "--socket", boxd.socket, "--vsock-port", "off"],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 1
    assert "another boxd is already serving" in out.stderr
    assert boxd.call("GET", "/v1/health")[0] == 200


def test_stale_socket_file_is_replaced(boxd_factory):
    instance = boxd_factory()
    instance.kill()  # SIGKILL leaves the socket file behind
    assert os.path.exists(instance.socket)
    instance.start()
    assert instance.call("GET", "/v1/health")[0] == 200


def test_sigterm_is_a_clean_exit(boxd):
    assert boxd.stop() == 0
    assert not os.path.exists(boxd.socket)
    assert "<6>stopped" in boxd.log()


def test_log_lines_carry_journald_priorities(boxd):
    boxd.request("GET", "/v1/health")
    lines = [l for l in boxd.log().splitlines() if l]
    assert lines and all(l[0] == "<" and l[2] == ">" for l in lines), lines


@pytest.mark.parametrize("args, message", [
    (["--vsock-port", "x"], "--vsock-port"),
    (["--cgroup", "maybe"], "--cgroup"),
    (["--report", "tcp:1.2.3.4"], "--report"),
    (["--report-interval", "0"], "--report-interval"),
    (["--bogus"], "unknown"),
    (["stray"], "unexpected"),
])
def test_bad_flags_are_usage_errors(tmp_path, args, message):
    out = subprocess.run([BOXD, "--run-dir", str(tmp_path), "--work-dir", str(tmp_path), *args],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 2
    assert message in out.stderr


def test_config_file_and_flags(tmp_path, boxd_factory):
    config = tmp_path / "boxd.conf"
    config.write_text("# boxd settings\n  display = :4242\nidle-timeout = 1\n")
    instance = boxd_factory("--config", str(config))
    s = socket.socket(socket.AF_UNIX)
    s.connect(instance.socket)
    s.settimeout(10)
    assert s.recv(10) == b""  # idle-timeout = 1 from the file took effect
    # The fixture's own --display flag wins over the file's.
    assert instance.call("GET", "/v1/health")[1]["display"]["name"] == ":65000"
    config.write_text("no-such-setting = 1\n")
    out = subprocess.run([BOXD, "--config", str(config)], capture_output=True, text=True, timeout=10)
    assert out.returncode == 2 and "unknown setting" in out.stderr and ":1:" in out.stderr


def test_dev_mode_uses_a_local_folder(tmp_path):
    proc = subprocess.Popen([BOXD, "--dev"], cwd=tmp_path, stderr=subprocess.PIPE)
    try:
        sock = tmp_path / ".boxd-dev" / "run" / "boxd.sock"
        wait_for(sock.exists, timeout=10, what="the --dev socket")
        assert (tmp_path / ".boxd-dev" / "work").is_dir()
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_version_and_help():
    assert subprocess.run([BOXD, "--version"], capture_output=True, text=True).stdout == "boxd 0.1.0\n"
    out = subprocess.run([BOXD, "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--vsock-allow-cid" in out.stdout
