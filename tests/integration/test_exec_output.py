"""GET /v1/exec/{id}/output: a command's log as NDJSON from a byte offset of
its whole output, followed while it runs, resumable anywhere byte-exact."""
import base64
import hashlib
import json
import os
import random
import time

from conftest import UnixConnection, assert_error
from exec_helpers import start_bg, wait_exited

# The raw bytes of every test's binary part: not UTF-8 on purpose.
BINARY = "head -c 4096 /dev/urandom"


def log_bytes(boxd, exec_id):
    """LOG.1 then LOG, as the shim left them."""
    path = os.path.join(boxd.work_dir, ".sbx", "logs", f"{exec_id}.log")
    data = b""
    for name in (path + ".1", path):
        if os.path.exists(name):
            with open(name, "rb") as f:
                data += f.read()
    return data


def chunk_bytes(event):
    raw = (base64.b64decode(event["data"]) if event.get("encoding") == "base64"
           else event["data"].encode())
    assert len(raw) == event["bytes"], event
    return raw


def open_output(boxd, exec_id, query, timeout=60):
    connection = UnixConnection(boxd.socket, timeout=timeout)
    connection.request("GET", f"/v1/exec/{exec_id}/output{query}")
    response = connection.getresponse()
    return connection, response


def read_output(boxd, exec_id, query="", cut_after=None, timeout=60, on_event=None):
    """The events of one call, in order. With `cut_after`, the connection is
    closed once that many bytes of the answer have come (the event being
    read is dropped, as a client cut off mid-line would)."""
    connection, response = open_output(boxd, exec_id, query, timeout)
    events, taken = [], 0
    try:
        assert response.status == 200, response.read()
        assert response.getheader("Content-Type") == "application/x-ndjson"
        while True:
            line = response.readline()
            if not line:
                break
            taken += len(line)
            if cut_after is not None and taken >= cut_after:
                break
            events.append(json.loads(line))
            if on_event:
                on_event(events[-1])
    finally:
        connection.close()
    return events


def reassemble(events, offset):
    """(bytes, next offset, exit event) of a run of events read from `offset`:
    each output event starts where the one before ended."""
    data, end = b"", None
    for event in events:
        if event["type"] == "lost":
            offset += event["bytes"]
        elif event["type"] == "output":
            assert event["offset"] == offset, (event["offset"], offset)
            data += chunk_bytes(event)
            offset += event["bytes"]
        elif event["type"] == "exit":
            end = event
    return data, offset, end


def test_resume_at_random_cuts_is_byte_exact(boxd_factory):
    # A cap of 160 MiB rotates at 80 MiB and still keeps all ~100 MB: the
    # reads cross a rotation while the command writes.
    boxd = boxd_factory("--log-cap", str(160 << 20))
    bg = start_bg(boxd, f"head -c 75000000 /dev/urandom | base64 -w 100; {BINARY}; "
                        f"echo done; {BINARY}")
    rng = random.Random(7)
    offset, data, cuts, end = 0, b"", 0, None
    while end is None:
        cut = rng.randrange(1, 12 << 20) if cuts < 20 else None
        events = read_output(boxd, bg, f"?offset={offset}&follow=1", cut_after=cut)
        assert not any(e["type"] == "lost" for e in events)
        piece, offset, end = reassemble(events, offset)
        data += piece
        cuts += cut is not None
    assert cuts == 20
    assert end["exitCode"] == 0 and end["id"] == bg and "stdout" not in end
    kept = log_bytes(boxd, bg)
    assert len(kept) > 100_000_000
    assert os.path.exists(os.path.join(boxd.work_dir, ".sbx", "logs", f"{bg}.log.1"))
    assert hashlib.sha256(data).hexdigest() == hashlib.sha256(kept).hexdigest()
    assert offset == len(kept) == wait_exited(boxd, bg)["logBytes"]


def test_foreground_stream_cut_resumes_through_output(boxd):
    # Text with multi-byte characters first, then (after the cut) binary.
    cmd = ("for i in $(seq 1 3000); do echo \"línea $i ✓ $(printf '%0150d' $i)\"; done; "
           f"echo warn >&2; sleep 1.5; {BINARY}; seq 1 50000; exit 5")
    connection = UnixConnection(boxd.socket, timeout=60)
    connection.request("POST", "/v1/exec", body=json.dumps({"cmd": cmd}),
                       headers={"Accept": "application/x-ndjson",
                                "Content-Type": "application/json"})
    response = connection.getresponse()
    assert response.status == 200
    events, got = [], 0
    while got < 200_000:
        event = json.loads(response.readline())
        events.append(event)
        if event["type"] in ("stdout", "stderr"):
            got += event["bytes"]
        assert event["type"] != "exit"
    connection.close()  # cut mid-way, while the command still runs
    exec_id = events[0]["id"]
    streamed, offset = b"", 0
    for event in events[1:]:
        assert event["offset"] == offset
        raw = event["data"].encode()
        assert len(raw) == event["bytes"]  # all text so far: nothing replaced
        streamed += raw
        offset += event["bytes"]
    rest = read_output(boxd, exec_id, f"?offset={offset}&follow=1")
    tail, end_offset, end = reassemble(rest, offset)
    assert end["exitCode"] == 5, end  # the command went on without its client
    assert any(e.get("encoding") == "base64" for e in rest)
    whole = log_bytes(boxd, exec_id)
    assert streamed + tail == whole and end_offset == len(whole)
    status, result = boxd.call("GET", f"/v1/exec/{exec_id}")
    assert status == 200 and result["exitCode"] == 5


def test_offset_older_than_kept_reports_lost(boxd_factory):
    boxd = boxd_factory("--log-cap", "16384")
    bg = start_bg(boxd, "for i in $(seq 1 20000); do echo \"row $i\"; done")
    wait_exited(boxd, bg)
    logged = sum(len(f"row {i}\n") for i in range(1, 20001))
    kept = log_bytes(boxd, bg)
    assert len(kept) < logged and logged > 16384
    events = read_output(boxd, bg, "?offset=0")
    assert events[0] == {"type": "lost", "bytes": logged - len(kept)}
    assert events[1]["offset"] == logged - len(kept)
    data, offset, end = reassemble(events, 0)
    assert data == kept and offset == logged and end["exitCode"] == 0
    # From inside what is kept: no loss, the same bytes from there.
    middle = logged - len(kept) // 2
    data, _, _ = reassemble(read_output(boxd, bg, f"?offset={middle}"), middle)
    assert data == kept[len(kept) - (logged - middle):]


def test_follow_gets_output_as_it_comes_and_the_exit(boxd):
    bg = start_bg(boxd, "for i in $(seq 1 10); do echo line$i; sleep 0.2; done; exit 3")
    began = time.monotonic()
    seen = []
    events = read_output(boxd, bg, "?follow=1",
                         on_event=lambda e: seen.append((time.monotonic() - began, e)))
    outputs = [(t, e) for t, e in seen if e["type"] == "output"]
    text = b"".join(chunk_bytes(e) for _, e in outputs).decode()
    assert text == "".join(f"line{i}\n" for i in range(1, 11))
    # Pieces came one by one as printed, not all at the end.
    assert len(outputs) >= 5 and outputs[0][0] < outputs[-1][0] - 1.0
    assert events[-1]["type"] == "exit" and events[-1]["exitCode"] == 3
    assert events[-1]["id"] == bg and "state" not in events[-1]


def test_bad_input(boxd):
    bg = start_bg(boxd, "echo hello")
    wait_exited(boxd, bg)
    for query in ("?offset=-1", "?offset=abc", "?offset=", "?follow=maybe"):
        assert_error(boxd.call("GET", f"/v1/exec/{bg}/output{query}"), 400, "bad_request",
                     query)
    assert_error(boxd.call("GET", "/v1/exec/b_nosuchcommand/output"), 404, "not_found")
    events = read_output(boxd, bg, "?offset=1000")
    assert [e["type"] for e in events] == ["exit"] and events[0]["exitCode"] == 0
    events = read_output(boxd, bg, "?offset=6&follow=1")
    assert [e["type"] for e in events] == ["exit"]
    events = read_output(boxd, bg)
    assert events[0] == {"type": "output", "offset": 0, "bytes": 6, "data": "hello\n"}


def test_without_follow_a_running_command_gives_what_is_there(boxd):
    bg = start_bg(boxd, "echo first; sleep 30")
    try:
        deadline = time.monotonic() + 10
        while True:
            events = read_output(boxd, bg, "?offset=0&follow=0")
            if events or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert events == [{"type": "output", "offset": 0, "bytes": 6, "data": "first\n"}]
    finally:
        boxd.call("POST", f"/v1/procs/{bg}/stop", {"signal": "SIGKILL", "graceSec": 0})


def test_secrets_are_masked(boxd):
    secret = "s3cr3t-value-for-output-1234"
    assert boxd.call("PUT", "/v1/secrets", {"secrets": {"OUT_TOKEN": secret}})[0] == 200
    try:
        bg = start_bg(boxd, 'echo "token=$OUT_TOKEN"')
        wait_exited(boxd, bg)
        events = read_output(boxd, bg, "?follow=1")
        text = b"".join(chunk_bytes(e) for e in events if e["type"] == "output").decode()
        assert secret not in text and "token=****" in text
        assert secret.encode() not in log_bytes(boxd, bg)
    finally:
        boxd.call("PUT", "/v1/secrets", {"secrets": {}})
