"""WebSocket (RFC 6455) on boxd's own HTTP layer, through the attach route
of a background command with a terminal (GET /v1/exec/{id}/attach): the
handshake's refusals, each hostile frame closed with its code, pings,
fragments put back together, the close handshake, and boxd healthy after
each. Spoken with tests/integration/ws_client.py, which sends what a
conforming client never would."""
import struct
import time

import pytest

from exec_helpers import start_bg
from ws_client import BINARY, CLOSE, CONTINUATION, PING, PONG, TEXT, HandshakeRefused, WebSocket

MESSAGE_MAX = 1 << 20


@pytest.fixture
def terminal(boxd):
    """A background `cat` on a terminal: what is typed comes back."""
    bg_id = start_bg(boxd, "cat", pty={"cols": 80, "rows": 24})
    yield bg_id
    boxd.call("POST", f"/v1/procs/{bg_id}/stop", {})


def attach(boxd, bg_id, headers=None):
    return WebSocket().connect(boxd.socket, f"/v1/exec/{bg_id}/attach", headers)


def healthy(boxd):
    assert boxd.request("GET", "/v1/health").status == 200


def refused(boxd, bg_id, headers):
    with pytest.raises(HandshakeRefused) as caught:
        attach(boxd, bg_id, headers)
    return caught.value


def test_handshake_refusals(boxd, terminal):
    answer = refused(boxd, terminal, {"Sec-WebSocket-Key": None})
    assert answer.status == 400 and b'"bad_request"' in answer.body, answer.body
    answer = refused(boxd, terminal, {"Sec-WebSocket-Key": "c2hvcnQ="})
    assert answer.status == 400, answer.body
    answer = refused(boxd, terminal, {"Sec-WebSocket-Version": "8"})
    assert answer.status == 426 and answer.headers.get("sec-websocket-version") == "13", \
        (answer.status, answer.headers)
    answer = refused(boxd, terminal, {"Upgrade": None, "Connection": None})
    assert answer.status == 400, answer.body
    answer = refused(boxd, "no-such-command", {})
    assert answer.status == 404 and b'"not_found"' in answer.body, answer.body
    healthy(boxd)


def test_no_extension_is_negotiated(boxd, terminal):
    ws = attach(boxd, terminal, {"Sec-WebSocket-Extensions": "permessage-deflate"})
    assert "sec-websocket-extensions" not in ws.headers, ws.headers
    ws.close(1000)
    assert ws.recv_close()[0] == 1000
    ws.shutdown()


@pytest.mark.parametrize("what, send, code", [
    ("unmasked", lambda ws: ws.send_frame(BINARY, b"x", mask=False), 1002),
    ("reserved bits", lambda ws: ws.send_frame(BINARY, b"x", rsv=4), 1002),
    ("unknown opcode", lambda ws: ws.send_frame(0x3, b"x"), 1002),
    ("fragmented ping", lambda ws: ws.send_frame(PING, b"x", fin=False), 1002),
    ("ping over 125 bytes", lambda ws: ws.send_frame(PING, b"p" * 126), 1002),
    ("continuation with no message", lambda ws: ws.send_frame(CONTINUATION, b"x"), 1002),
    ("invalid UTF-8 text", lambda ws: ws.send_frame(TEXT, b"\xc0\xaf"), 1007),
    ("a surrogate in text", lambda ws: ws.send_frame(TEXT, b"\xed\xa0\x80"), 1007),
    # Declared over 1 MiB: refused from the head, the payload never sent.
    ("frame over 1 MiB", lambda ws: ws.send_raw(
        bytes([0x82, 0xFF]) + struct.pack("!Q", MESSAGE_MAX + 1) + b"\0\0\0\0"), 1009),
    ("close code 1005", lambda ws: ws.send_frame(CLOSE, struct.pack("!H", 1005)), 1002),
    ("close of one byte", lambda ws: ws.send_frame(CLOSE, b"\x03"), 1002),
])
def test_hostile_frames_are_closed(boxd, terminal, what, send, code):
    ws = attach(boxd, terminal)
    send(ws)
    got, _ = ws.recv_close()
    assert got == code, (what, got)
    assert ws.wait_eof(), what
    ws.shutdown()
    healthy(boxd)


def test_message_over_limit_in_fragments(boxd, terminal):
    ws = attach(boxd, terminal)
    ws.send_frame(BINARY, b"a" * (MESSAGE_MAX // 2 + 1), fin=False)
    ws.send_raw(bytes([0x80, 0xFF]) + struct.pack("!Q", MESSAGE_MAX // 2) + b"\0\0\0\0")
    assert ws.recv_close()[0] == 1009
    assert ws.wait_eof()
    ws.shutdown()
    healthy(boxd)


def read_output(ws, wanted, timeout=10):
    """The command's output (binary frames) until `wanted` is in it;
    anything else the server sends (a pong) is returned alongside."""
    deadline = time.monotonic() + timeout
    output, others = b"", []
    while wanted not in output:
        assert time.monotonic() < deadline, output
        opcode, payload = ws.recv()
        if opcode == BINARY:
            output += payload
        else:
            others.append((opcode, payload))
    return output, others


def test_ping_is_answered(boxd, terminal):
    ws = attach(boxd, terminal)
    ws.ping(b"are you there")
    while True:
        opcode, payload = ws.recv()
        if opcode != BINARY:  # the terminal's replayed output may come first
            break
    assert (opcode, payload) == (PONG, b"are you there")
    ws.close(1000)
    ws.recv_close()
    ws.shutdown()
    healthy(boxd)


def test_fragmented_input_is_one_message(boxd, terminal):
    ws = attach(boxd, terminal)
    ws.send_frame(BINARY, b"frag", fin=False)
    ws.ping(b"between")
    ws.send_frame(CONTINUATION, b"mented", fin=False)
    ws.send_frame(CONTINUATION, b" input\n")
    # The ping is answered as it comes, before the message is whole.
    _, others = read_output(ws, b"fragmented input")
    assert (PONG, b"between") in others, others
    ws.close(1000)
    ws.recv_close()
    ws.shutdown()
    healthy(boxd)


def test_close_handshake_echoes(boxd, terminal):
    ws = attach(boxd, terminal)
    ws.close(1000, "done")
    assert ws.recv_close()[0] == 1000
    assert ws.wait_eof()
    ws.shutdown()
    # The command is not the session's: it still runs, and can be attached again.
    ws = attach(boxd, terminal)
    ws.send_binary(b"again\n")
    read_output(ws, b"again")
    ws.close(4000, "an application's code")
    assert ws.recv_close()[0] == 4000
    ws.shutdown()
    healthy(boxd)


def test_client_vanishing_mid_frame(boxd, terminal):
    ws = attach(boxd, terminal)
    ws.send_raw(b"\x82\xfe\x01")
    ws.shutdown()
    healthy(boxd)
    ws = attach(boxd, terminal)
    ws.close(1000)
    assert ws.recv_close()[0] == 1000
    ws.shutdown()
