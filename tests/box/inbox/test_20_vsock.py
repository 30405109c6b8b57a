"""vsock for real (issue 20): the kernel's loopback transport (vsock_loopback,
loaded at boot by /etc/modules-load.d) carries connections from CID 1 to
boxd's listener on port 1024; the image's boxd.conf allows CID 1."""
import json
import socket
import time

from boxtest import api, emit, figure, health, request, start_boxd, stop_boxd, unit

VSOCK = (1, 1024)  # VMADDR_CID_LOCAL: the loopback transport


def boxd_now():
    return unit("boxd.service", "MainPID", "NRestarts", "ActiveState")


def same_boxd(before):
    """Same process, no restart since `before` (other areas may crash boxd on purpose first)."""
    now = boxd_now()
    assert now == before and now["ActiveState"] == "active", f"boxd changed: {before} -> {now}"


def check_loopback_transport():
    with open("/proc/modules") as f:
        assert any(l.startswith("vsock_loopback ") for l in f), "vsock_loopback not loaded"


def check_health_and_exec_over_vsock():
    main = boxd_now()
    start = time.monotonic()
    h = health(address=VSOCK, timeout=10)
    assert h["ok"] is True, h
    r = api("POST", "/v1/exec", {"cmd": "echo over-vsock; uname -r"}, address=VSOCK, timeout=60)
    took = time.monotonic() - start
    assert r["exitCode"] == 0 and r["stdout"].startswith("over-vsock\n"), r
    same_boxd(main)
    return f"health + exec over vsock in {took * 1000:.0f} ms"


def check_1000_connections():
    main = boxd_now()
    start = time.monotonic()
    for i in range(1000):
        status, _, body = request("GET", "/v1/health", address=VSOCK, timeout=10)
        assert status == 200 and b'"ok":true' in body.replace(b" ", b""), (i, status, body[:200])
    took = time.monotonic() - start
    figure("vsock-1000-health-s", f"{took:.1f}")
    same_boxd(main)
    return (f"1000 connections in {took:.1f} s, same MainPID {main['MainPID']}, "
            f"NRestarts still {main['NRestarts']}")


def refused(port):
    """True when boxd closes a vsock connection without answering a request."""
    s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect((1, port))
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: box\r\n\r\n")
        return s.recv(4096) == b""
    except (ConnectionResetError, BrokenPipeError):  # closed before the request was read
        return True
    finally:
        s.close()


def check_other_cid_closed_at_accept():
    # Same binary and flags; only the allow-list differs (the host, CID 2, alone).
    denying, top1 = start_boxd("deny", "--vsock-port", "1025")
    allowing, top2 = start_boxd("allow", "--vsock-port", "1026", "--vsock-allow-cid", "1")
    try:
        for _ in range(20):
            assert refused(1025), "a CID 1 peer got an answer from a boxd that allows only CID 2"
        assert not refused(1026), "the allowing boxd did not answer"
        assert denying.poll() is None, "the refusing boxd died"
        log = open(f"{top1}/stderr").read()
    finally:
        stop_boxd(denying, top1)
        stop_boxd(allowing, top2)
    emit(f"refusing boxd said: {log.strip()[-300:]}")
    return "20 connections from CID 1 closed with no answer; the same with CID 1 allowed answers"


def check_report_ready_to_vsock_listener():
    listener = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    listener.bind((socket.VMADDR_CID_ANY, 9999))
    listener.listen(1)
    listener.settimeout(30)
    proc, top = start_boxd("report", "--vsock-port", "off", "--report", "vsock:1:9999")
    try:
        conn, peer = listener.accept()
        conn.settimeout(30)
        data = b""
        while b"\n" not in data:
            chunk = conn.recv(65536)
            assert chunk, f"report connection closed after {data!r}"
            data += chunk
        event = json.loads(data.split(b"\n")[0])
        conn.close()
    finally:
        listener.close()
        stop_boxd(proc, top)
    assert event["event"] == "ready" and event["ok"] is True, event
    assert "display" in event and "bootId" in event, event
    return f"ready event from CID {peer[0]} port {peer[1]}"
