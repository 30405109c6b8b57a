"""Interactive commands: terminals ("pty"), open stdin ("stdin": {"stream":
true}, POST /v1/exec/{id}/stdin) and attaching (GET /v1/exec/{id}/attach, a
WebSocket), against a real boxd, real shells and real terminal programs."""
import json
import os
import re
import select
import shutil
import signal
import time

import pytest

from conftest import UnixConnection, assert_error, wait_for
from exec_helpers import ok, proc, run, start_bg, wait_exited
from ws_client import BINARY, CLOSE, TEXT, WebSocket

TERM_SIZE = {"cols": 80, "rows": 24}


def post_stdin(boxd, exec_id, data, close=False):
    path = f"/v1/exec/{exec_id}/stdin" + ("?close=1" if close else "")
    return boxd.call("POST", path, data, headers={"Content-Type": "application/octet-stream"})


def log_of(boxd, exec_id):
    """The command's log file itself, bytes as written (the log route
    answers text)."""
    with open(proc(boxd, exec_id)["logPath"], "rb") as f:
        return f.read()


class Attached:
    """One client attached to a command: its output gathered as it comes,
    its text frames (exit, lost, error) kept apart."""

    def __init__(self, boxd, exec_id):
        self.ws = WebSocket(timeout=10).connect(boxd.socket, f"/v1/exec/{exec_id}/attach")
        self.output = b""
        self.events = []
        self.closed = None

    def pump(self, timeout=0.2):
        """Reads whatever comes within `timeout`; False once closed."""
        if self.closed is not None:
            return False
        # A frame that has begun to arrive comes whole: wait for its start only.
        if not self.ws.data and not select.select([self.ws.sock], [], [], timeout)[0]:
            return True
        opcode, payload = self.ws.recv()
        if opcode == BINARY:
            self.output += payload
        elif opcode == TEXT:
            self.events.append(json.loads(payload))
        elif opcode == CLOSE:
            self.closed = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
            return False
        return True

    def until(self, predicate, timeout=15, what="output"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self):
                return self
            if not self.pump():
                break
        if predicate(self):
            return self
        raise AssertionError(f"timed out waiting for {what}: {self.output[-2000:]!r} "
                             f"{self.events}")

    def type(self, text):
        self.ws.send_binary(text.encode() if isinstance(text, str) else text)

    def control(self, obj):
        self.ws.send_text(json.dumps(obj))

    def exit_event(self):
        return next((e for e in self.events if e.get("type") == "exit"), None)

    def close(self):
        try:
            self.ws.close(1000, "done")
        except OSError:
            pass


def shell(boxd, cols=80, rows=24, cmd="bash --norc --noprofile -i", **fields):
    return start_bg(boxd, cmd, pty={"cols": cols, "rows": rows}, **fields)


# ---- terminals through the plain API ----

def test_pty_command_sees_a_terminal_of_its_size(boxd):
    body = ok(boxd, "tput cols; tput lines; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo tty;"
              " echo $TERM; ps -o tty= -p $$", pty={"cols": 132, "rows": 43})
    lines = body["stdout"].split("\r\n")
    assert lines[:4] == ["132", "43", "tty", "xterm-256color"], body
    assert lines[4].startswith("pts/"), body
    assert body["stderr"] == "", "a terminal is one stream"


@pytest.mark.parametrize("pty", [{"cols": 0, "rows": 24}, {"cols": 10000, "rows": 24},
                                 {"cols": 80}, {"cols": "80", "rows": 24},
                                 {"cols": 80.5, "rows": 24}, [80, 24], "yes"])
def test_bad_terminal_sizes_are_refused(boxd, pty):
    assert_error(run(boxd, "true", pty=pty), 400, "bad_request", pty)
    assert boxd.call("GET", "/v1/health")[0] == 200


@pytest.mark.parametrize("stdin", [{"stream": "yes"}, {"open": True}, 42, ["a"]])
def test_bad_stdin_is_refused(boxd, stdin):
    assert_error(run(boxd, "true", stdin=stdin), 400, "bad_request", stdin)


# ---- open stdin ----

def test_open_stdin_feeds_cat_chunk_by_chunk_until_closed(boxd):
    exec_id = start_bg(boxd, "cat", stdin={"stream": True})
    for chunk in (b"first ", b"second\n", bytes(range(256))):
        before = len(log_of(boxd, exec_id))
        status, body = post_stdin(boxd, exec_id, chunk)
        assert status == 200 and body == {"id": exec_id, "closed": False}, body
        # Echoed as it is sent, not at the end.
        wait_for(lambda: len(log_of(boxd, exec_id)) >= before + len(chunk), timeout=5,
                 what="the chunk's echo")
    assert proc(boxd, exec_id)["state"] == "running"
    status, body = post_stdin(boxd, exec_id, b"last", close=True)
    assert status == 200 and body["closed"] is True, body
    ended = wait_exited(boxd, exec_id)
    assert ended["exitCode"] == 0
    assert log_of(boxd, exec_id) == b"first second\n" + bytes(range(256)) + b"last"


def test_open_stdin_streams_a_big_body_without_holding_it(boxd):
    exec_id = start_bg(boxd, "sha256sum", stdin={"stream": True})
    data = os.urandom(1 << 20) * 64  # 64 MiB
    status, body = post_stdin(boxd, exec_id, data, close=True)
    assert status == 200, body
    wait_exited(boxd, exec_id)
    import hashlib
    assert log_of(boxd, exec_id).split()[0].decode() == hashlib.sha256(data).hexdigest()


def test_foreground_stream_with_open_stdin(boxd):
    """cat in a streamed foreground call echoes each chunk sent from another
    connection, and the call ends at the close."""
    connection = UnixConnection(boxd.socket, timeout=30)
    connection.request("POST", "/v1/exec",
                       body=json.dumps({"cmd": "cat", "stdin": {"stream": True}}),
                       headers={"Accept": "application/x-ndjson",
                                "Content-Type": "application/json"})
    response = connection.getresponse()
    started = json.loads(response.readline())
    assert started["type"] == "started"
    exec_id = started["id"]
    seen = b""
    for chunk in ("alpha\n", "beta\n"):
        assert post_stdin(boxd, exec_id, chunk.encode())[0] == 200
        while chunk.encode() not in seen:
            event = json.loads(response.readline())
            assert event["type"] in ("stdout", "alive"), event
            seen += event.get("data", "").encode()
    assert post_stdin(boxd, exec_id, b"", close=True)[0] == 200
    while True:
        event = json.loads(response.readline())
        if event["type"] == "exit":
            break
    assert event["exitCode"] == 0
    connection.close()


def test_open_stdin_left_open_ends_at_the_timeout(boxd):
    exec_id = start_bg(boxd, "cat", stdin={"stream": True}, timeoutSec=2)
    assert post_stdin(boxd, exec_id, b"x")[0] == 200
    ended = wait_exited(boxd, exec_id, timeout=20)
    assert ended["timedOut"] is True and ended["exitCode"] == 124


def test_stdin_refusals(boxd):
    assert_error(post_stdin(boxd, "c_0000000000000000", b"x"), 404, "not_found")
    no_stdin = start_bg(boxd, "sleep 30")
    assert_error(post_stdin(boxd, no_stdin, b"x"), 409, "conflict")
    ended = start_bg(boxd, "cat", stdin={"stream": True})
    assert post_stdin(boxd, ended, b"", close=True)[0] == 200
    wait_exited(boxd, ended)
    assert_error(post_stdin(boxd, ended, b"late"), 409, "conflict")
    bad = start_bg(boxd, "cat", stdin={"stream": True})
    assert_error(boxd.call("POST", f"/v1/exec/{bad}/stdin?close=yes", b"x"), 400, "bad_request")
    assert boxd.call("GET", "/v1/health")[0] == 200


def test_typed_text_into_a_terminal_and_end_of_file(boxd):
    exec_id = shell(boxd, cmd="read a; echo got:$a; read b || echo eof")
    assert post_stdin(boxd, exec_id, b"abc\n", close=True)[0] == 200
    wait_exited(boxd, exec_id)
    text = log_of(boxd, exec_id)
    assert b"got:abc" in text and b"eof" in text, text


# ---- attaching ----

def test_attach_types_into_bash_and_gets_answers(boxd):
    exec_id = shell(boxd)
    a = Attached(boxd, exec_id)
    a.type("echo $((6*7))\r")
    a.until(lambda s: b"42\r\n" in s.output, what="42")
    a.type("exit 3\r")
    a.until(lambda s: s.closed is not None, what="the close")
    assert a.closed == 1000
    assert a.exit_event()["exitCode"] == 3


def test_resize_changes_the_size_and_sends_sigwinch(boxd):
    exec_id = shell(boxd)
    a = Attached(boxd, exec_id)
    a.type("trap 'echo WINCH' WINCH; tput cols\r")
    a.until(lambda s: b"80\r\n" in s.output, what="80 columns")
    a.control({"resize": [123, 45]})
    # bash runs its trap when the signal arrives between commands. The size is
    # read by stty from the terminal itself: tput lets LINES and COLUMNS in the
    # environment win, and bash's readline may have set those to the old size.
    a.type("sleep 0.3; stty size\r")
    a.until(lambda s: b"WINCH" in s.output and b"45 123\r\n" in s.output,
            what="the new size and SIGWINCH")
    a.close()


def test_sigint_interrupts_the_foreground_program(boxd):
    exec_id = shell(boxd)
    a = Attached(boxd, exec_id)
    a.type("sleep 100\r")
    time.sleep(0.5)
    started = time.monotonic()
    a.control({"signal": "SIGINT"})
    # An interactive bash drops the rest of a line ^C interrupted: ask after.
    a.type("echo status=$?\r")
    a.until(lambda s: b"status=130" in s.output, what="sleep interrupted")
    assert time.monotonic() - started < 5
    assert proc(boxd, exec_id)["state"] == "running", "the shell itself lives on"
    a.close()


def test_bad_controls_get_errors_and_the_session_lives(boxd):
    exec_id = shell(boxd)
    a = Attached(boxd, exec_id)
    for control in ({"resize": [0, 24]}, {"resize": [10000, 24]}, {"resize": [80]},
                    {"signal": "SIGNOPE"}, {"what": 1}):
        before = len(a.events)
        a.control(control)
        a.until(lambda s: len(s.events) > before, what=f"an error for {control}")
        assert a.events[-1]["type"] == "error", a.events[-1]
    a.ws.send_text("not json")
    a.until(lambda s: s.events[-1]["type"] == "error" and len(s.events) == 6, what="error")
    a.type("echo still-here\r")
    a.until(lambda s: b"still-here\r\n" in s.output.split(b"echo still-here")[-1],
            what="the session to go on")
    a.close()


def test_attach_refusals(boxd):
    status, body = boxd.call("GET", "/v1/exec/b_0000000000000000/attach",
                             headers={"Upgrade": "websocket", "Connection": "Upgrade",
                                      "Sec-WebSocket-Version": "13",
                                      "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
    assert status == 404, body
    ended = ok(boxd, "true", background=True)["bgId"]
    wait_exited(boxd, ended)
    status, body = boxd.call("GET", f"/v1/exec/{ended}/attach",
                             headers={"Upgrade": "websocket", "Connection": "Upgrade",
                                      "Sec-WebSocket-Version": "13",
                                      "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
    assert_error((status, body), 409, "conflict")


def test_input_to_a_command_without_input_is_an_error(boxd):
    exec_id = start_bg(boxd, "sleep 30")
    a = Attached(boxd, exec_id)
    a.type("hello")
    a.until(lambda s: s.events and s.events[-1]["type"] == "error", what="an error")
    assert "takes no input" in a.events[-1]["message"]
    a.close()


def test_pipe_command_attached_with_close_stdin(boxd):
    exec_id = start_bg(boxd, 'while read -r line; do echo "${line^^}"; done',
                       stdin={"stream": True})
    a = Attached(boxd, exec_id)
    a.type("hello\n")
    a.until(lambda s: b"HELLO\n" in s.output, what="HELLO")
    a.control({"closeStdin": True})
    a.until(lambda s: s.closed is not None, what="the end")
    assert a.exit_event()["exitCode"] == 0


def pyte_screen(data, cols=80, rows=24):
    pyte = pytest.importorskip("pyte")
    screen = pyte.Screen(cols, rows)
    stream = pyte.ByteStream(screen)
    # Debian's pyte 0.8 fails on xterm's private SGR (vim's modifyOtherKeys
    # request, CSI ? 4 m and the like), which change nothing on the screen.
    stream.feed(re.sub(rb"\x1b\[[?>][0-9;]*m", b"", data))
    return [line.rstrip() for line in screen.display]


def full_screen_program():
    for name in ("vim.tiny", "vim"):
        if shutil.which(name):
            return name
    pytest.skip("no vim in this machine (apt-get install vim-tiny)")


def test_full_screen_program_replays_the_same_screen(boxd, tmp_path):
    editor = full_screen_program()
    path = os.path.join(boxd.work_dir, "notes.txt")
    with open(path, "w") as f:
        f.write("".join(f"line {i} of the file\n" for i in range(1, 41)))
    exec_id = shell(boxd, cmd=f"{editor} -u NONE -N notes.txt")
    first = Attached(boxd, exec_id)
    first.until(lambda s: any("line 20 of the file" in line for line in pyte_screen(s.output)),
                what="vim's screen")
    first.type("7Gdd")  # go to line 7, delete it
    first.until(lambda s: "line 8 of the file" in pyte_screen(s.output)[6], what="the edit")
    time.sleep(0.3)
    first.pump(0.3)
    shown = pyte_screen(first.output)
    assert shown[0] == "line 1 of the file" and shown[6] == "line 8 of the file", shown
    second = Attached(boxd, exec_id)
    second.until(lambda s: pyte_screen(s.output) == shown, timeout=10, what="the same screen")
    first.close()
    second.type(":q!\r")
    second.until(lambda s: s.closed is not None, what="vim to quit")


def test_several_clients_see_the_same_output(boxd):
    exec_id = shell(boxd)
    a, b = Attached(boxd, exec_id), Attached(boxd, exec_id)
    a.type("echo from-a\r")
    for s in (a, b):
        s.until(lambda t: b"from-a\r\n" in t.output, what="from-a")
    a.close()
    b.type("echo from-b\r")
    b.until(lambda t: b"from-b\r\n" in t.output, what="from-b after a left")
    assert proc(boxd, exec_id)["state"] == "running", "the command outlives its clients"
    b.close()


def test_terminal_survives_a_kill_of_boxd(boxd):
    exec_id = shell(boxd)
    a = Attached(boxd, exec_id)
    a.type("X=kept; echo before-$X\r")
    a.until(lambda s: b"before-kept\r\n" in s.output, what="before")
    boxd.kill(signal.SIGKILL)
    boxd.start()
    again = Attached(boxd, exec_id)
    again.until(lambda s: b"before-kept" in s.output, what="the replay across the restart")
    again.type("echo after-$X\r")
    again.until(lambda s: b"after-kept\r\n" in s.output, what="typing on")
    again.type("exit\r")
    again.until(lambda s: s.closed is not None, what="the end")
    assert again.exit_event()["exitCode"] == 0


def test_secrets_typed_or_printed_in_a_terminal_are_masked(boxd):
    secret = "hunter2-the-terminal-secret"
    status, body = boxd.call("PUT", "/v1/secrets", {"secrets": {"TERM_SECRET": secret}})
    assert status in (200, 204), body
    try:
        typed_and_printed(boxd, secret)
    finally:
        boxd.call("PUT", "/v1/secrets", {"secrets": {}})  # out of the kernel keyring


def typed_and_printed(boxd, secret):
    exec_id = shell(boxd)
    a = Attached(boxd, exec_id)
    a.type(f"echo typed {secret}; echo printed $TERM_SECRET\r")
    a.until(lambda s: b"printed ****" in s.output, what="the masked echo")
    assert secret.encode() not in a.output
    a.type("exit\r")
    a.until(lambda s: s.closed is not None, what="the end")
    assert secret.encode() not in log_of(boxd, exec_id)


def test_terminal_activity_reason(boxd):
    exec_id = shell(boxd)
    a = Attached(boxd, exec_id)
    health = boxd.call("GET", "/v1/health")[1]
    assert "terminal" in health["activity"]["reasons"], health["activity"]
    a.close()
    wait_for(lambda: "terminal" not in boxd.call("GET", "/v1/health")[1]["activity"]["reasons"],
             timeout=5, what="the terminal reason to end")
