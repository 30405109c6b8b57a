"""Whether the box is in use, and why (health's activity: busy, reasons,
idleSince; API.md "Health", docs/freeze.md): each reason turned on and off
against a real boxd, and busy false within a second of the last use."""
import socket
import threading
import time

from conftest import wait_for
from live_helpers import LiveViewer
from screen_helpers import box, display  # noqa: F401 (fixtures)


def activity(b):
    status, health = b.call("GET", "/v1/health")
    assert status == 200, health
    return health["activity"]


def reasons(b):
    return activity(b)["reasons"]


def becomes_idle(b, since):
    """busy turns false within a second; idleSince is when the use ended."""
    started = time.monotonic()
    state = wait_for(lambda: (a := activity(b))["busy"] is False and a, timeout=1.0,
                     what="busy to turn false")
    assert state["reasons"] == [] and isinstance(state["idleSince"], int), state
    assert since - 50 <= state["idleSince"] <= time.time() * 1000 + 50, (since, state)
    return time.monotonic() - started


def test_an_idle_box_is_not_busy_and_health_is_no_use(boxd):
    for _ in range(5):
        state = activity(boxd)
    assert state["busy"] is False and state["reasons"] == [], state
    # Health calls are not calls: idleSince stays at boxd's start.
    status, health = boxd.call("GET", "/v1/health")
    assert state["idleSince"] <= health["startedAt"] + 1000, (state, health["startedAt"])


def test_a_call_in_flight_and_a_stream(boxd):
    done = {}
    thread = threading.Thread(target=lambda: done.update(r=boxd.call(
        "POST", "/v1/exec", {"cmd": "sleep 1.2"})))
    thread.start()
    state = wait_for(lambda: (a := activity(boxd))["busy"] and a, what="the call to count")
    assert state["reasons"] == ["call"] and state["idleSince"] is None, state
    assert state["callsInFlight"] == 1, state
    thread.join()
    assert done["r"][0] == 200
    becomes_idle(boxd, time.time() * 1000 - 500)

    # A streamed exec (NDJSON): a call and a stream, both ended with it.
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(boxd.socket)
    body = b'{"cmd": "sleep 1"}'
    conn.sendall(b"POST /v1/exec HTTP/1.1\r\nHost: b\r\nAccept: application/x-ndjson\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(body), body))
    state = wait_for(lambda: "stream" in (r := reasons(boxd)) and r, what="the stream")
    assert state == ["call", "stream"], state
    conn.settimeout(10)
    data = b""
    while b"0\r\n\r\n" not in data:
        data += conn.recv(65536)
    conn.close()
    becomes_idle(boxd, time.time() * 1000 - 500)


def test_an_upload_counts_while_its_body_comes(boxd):
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(boxd.socket)
    conn.sendall(b"POST /v1/sync/upload?dest=up HTTP/1.1\r\nHost: b\r\n"
                 b"Content-Type: application/gzip\r\nContent-Length: 100000\r\n\r\n" + b"\x1f\x8b")
    state = wait_for(lambda: "upload" in (r := reasons(boxd)) and r, what="the upload")
    assert state == ["call", "upload"], state
    conn.close()  # the client gives up: the upload ends with it
    becomes_idle(boxd, time.time() * 1000 - 500)


def test_a_background_command_counts_until_it_ends(boxd):
    status, job = boxd.call("POST", "/v1/exec", {"cmd": "sleep 60", "background": True})
    assert status == 200, job
    state = activity(boxd)
    assert state["busy"] and state["reasons"] == ["background"], state
    # The calls' rule: an hour after the last call while it runs.
    assert state["keepAwakeUntil"] - state["lastCallAt"] == 3600 * 1000, state
    ended = time.time() * 1000
    status, _ = boxd.call("POST", f"/v1/procs/{job['bgId']}/stop", {})
    assert status == 200
    wait_for(lambda: boxd.call("GET", f"/v1/procs/{job['bgId']}")[1]["state"] != "running")
    becomes_idle(boxd, ended)


def test_the_lock_counts_and_keeps_the_box_awake(boxd):
    assert boxd.call("PUT", "/v1/lock", {"locked": True, "note": "a login"})[0] == 200
    state = activity(boxd)
    assert state["busy"] and state["reasons"] == ["lock"], state
    assert state["keepAwakeUntil"] >= time.time() * 1000 + 9.9 * 60 * 1000, state
    time.sleep(0.3)
    ended = time.time() * 1000
    assert boxd.call("PUT", "/v1/lock", {"locked": False})[0] == 200
    becomes_idle(boxd, ended)
    # Ten minutes from the hand-back, as from a call.
    assert activity(boxd)["keepAwakeUntil"] >= ended + 10 * 60 * 1000 - 50


def test_a_lock_kept_across_a_restart_still_counts(boxd):
    assert boxd.call("PUT", "/v1/lock", {"locked": True})[0] == 200
    boxd.kill()
    boxd.start()
    assert reasons(boxd) == ["lock"]
    assert boxd.call("PUT", "/v1/lock", {"locked": False})[0] == 200
    assert activity(boxd)["busy"] is False


def test_the_live_view_and_a_recording(box, display):  # noqa: F811
    viewer = LiveViewer(box.socket)
    try:
        state = wait_for(lambda: "liveView" in (r := reasons(box)) and r, what="the live view")
        # A call in flight that is the live view, not a stream as well.
        assert state == ["call", "liveView"], state
    finally:
        viewer.close()
    becomes_idle(box, time.time() * 1000 - 1000)

    status, started = box.call("POST", "/v1/screen/record/start", {})
    assert status == 200, started
    assert reasons(box) == ["recording"]
    ended = time.time() * 1000
    status, stopped = box.call("POST", "/v1/screen/record/stop")
    assert status == 200, stopped
    becomes_idle(box, ended)
