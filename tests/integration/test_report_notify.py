"""--report to a unix socket peer, and the systemd notify protocol against
our own NOTIFY_SOCKET listener (these machines have no systemd as PID 1)."""
import json
import os
import socket
import time

from conftest import wait_for


def read_lines(conn, count, timeout=15):
    conn.settimeout(timeout)
    data = b""
    while data.count(b"\n") < count:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return [json.loads(line) for line in data.splitlines()[:count]]


def test_report_sends_ready_then_periodic_health(boxd_factory, tmp_path):
    path = str(tmp_path / "report.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(4)
    instance = boxd_factory("--report", f"unix:{path}", "--report-interval", "1")
    server.settimeout(10)
    conn, _ = server.accept()
    events = read_lines(conn, 3)
    assert [e["event"] for e in events] == ["ready", "health", "health"]
    assert events[0]["ok"] is True and "display" in events[0]
    assert list(events[0])[0] == "event"
    assert events[2]["uptimeMs"] > events[1]["uptimeMs"]
    # The peer goes away; boxd reconnects by itself and says hello again.
    conn.close()
    conn, _ = server.accept()
    assert read_lines(conn, 1)[0]["event"] == "health"
    conn.close()
    assert instance.call("GET", "/v1/health")[0] == 200


def test_report_peer_absent_at_start_is_retried(boxd_factory, tmp_path):
    path = str(tmp_path / "late.sock")
    instance = boxd_factory("--report", f"unix:{path}", "--report-interval", "30")
    time.sleep(0.3)
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(4)
    server.settimeout(10)
    conn, _ = server.accept()
    assert read_lines(conn, 1)[0]["event"] == "ready"
    assert instance.call("GET", "/v1/health")[0] == 200


def test_notify_ready_status_and_watchdog(boxd_factory, tmp_path):
    path = str(tmp_path / "notify.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(path)
    listener.settimeout(10)
    instance = boxd_factory(start=False)
    instance.env.update(NOTIFY_SOCKET=path, WATCHDOG_USEC="400000")
    instance.start()
    messages = []
    wait_for(lambda: messages.append(listener.recv(4096).decode()) or
             sum("WATCHDOG=1" in m for m in messages) >= 2, timeout=10, what="watchdog pings")
    ready = [m for m in messages if "READY=1" in m]
    assert ready and "STATUS=serving on" in ready[0]
    instance.stop()
    # Watchdog pings sent meanwhile may come first.
    after = []
    wait_for(lambda: after.append(listener.recv(4096).decode()) or
             any("STOPPING=1" in m for m in after), timeout=10, what="STOPPING=1")


def test_no_timers_without_report_or_watchdog(boxd):
    """Idle means idle: boxd sleeps in epoll_wait with no timeout."""
    pid = boxd.proc.pid
    time.sleep(0.2)
    before = open(f"/proc/{pid}/stat").read().split()
    switches_before = int(open(f"/proc/{pid}/status").read().split("voluntary_ctxt_switches:")[1].split()[0])
    time.sleep(2)
    switches_after = int(open(f"/proc/{pid}/status").read().split("voluntary_ctxt_switches:")[1].split()[0])
    after = open(f"/proc/{pid}/stat").read().split()
    assert switches_after == switches_before
    assert before[13:15] == after[13:15]  # utime, stime unchanged
