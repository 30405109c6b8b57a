"""Screen: shots, input and recordings against a real Xvfb (API.md "Screen")."""
import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from screen_helpers import (BOXCTL_BIN, PATTERN_BIN, WORKER_BIN, Boxd, Worker, Xvfb,  # noqa: E402
                            decode_rgb, pixel, probe_video)


@pytest.fixture
def display():
    server = Xvfb()
    yield server
    server.kill()


@pytest.fixture
def box(tmp_path, display):
    daemon = Boxd(tmp_path, display.display)
    yield daemon
    daemon.stop()


def start_client(display, *args):
    """The pattern client (tests/screen-pattern.c); returns once it has drawn."""
    proc = subprocess.Popen([PATTERN_BIN, *args], env=display.env(), stdout=subprocess.PIPE)
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(proc.stdout.fileno(), 1)  # byte by byte: nothing past "ready" is consumed
        assert chunk, "the pattern client ended"
        line += chunk
    assert line == b"ready\n"
    return proc


@pytest.fixture
def pattern(display):
    proc = start_client(display)
    yield proc
    proc.kill()
    proc.wait()


def wait_for(predicate, timeout=20, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def shot(box, query=""):
    answer = box.request("GET", "/v1/screen/shot" + query)
    assert answer.status == 200, answer.body
    return answer


# ---- screenshots ----

def test_shot_of_a_solid_colour(box, display):
    display.run(["xsetroot", "-solid", "#336699"])
    answer = shot(box, "?cursor=0")
    assert answer.headers["content-type"] == "image/png"
    assert answer.body[:8] == b"\x89PNG\r\n\x1a\n"
    assert (answer.headers["x-width"], answer.headers["x-height"]) == ("1280", "800")
    decoded = decode_rgb(answer.body)
    assert decoded[:2] == (1280, 800)
    for x, y in [(0, 0), (640, 400), (1279, 799)]:
        assert pixel(decoded, x, y) == (0x33, 0x66, 0x99)


def test_shot_pixels_region_scale_and_jpeg(box, pattern):
    decoded = decode_rgb(shot(box, "?cursor=0").body)
    assert pixel(decoded, 150, 150) == (0, 255, 0)
    assert pixel(decoded, 350, 150) == (0, 0, 255)
    assert pixel(decoded, 10, 250) == (255, 255, 255)

    region = shot(box, "?x=100&y=100&w=100&h=100&cursor=0")
    assert (region.headers["x-width"], region.headers["x-height"]) == ("100", "100")
    decoded = decode_rgb(region.body)
    assert {pixel(decoded, x, y) for x in range(0, 100, 9) for y in range(0, 100, 9)} == {(0, 255, 0)}

    half = shot(box, "?scale=0.5&cursor=0")
    assert (half.headers["x-width"], half.headers["x-height"]) == ("640", "400")
    assert pixel(decode_rgb(half.body), 75, 75) == (0, 255, 0)

    jpeg = shot(box, "?format=jpeg&quality=90&cursor=0")
    assert jpeg.headers["content-type"] == "image/jpeg"
    assert jpeg.body[:2] == b"\xff\xd8"
    red, green, blue = pixel(decode_rgb(jpeg.body), 150, 150)
    assert red < 30 and green > 225 and blue < 30
    low = shot(box, "?format=jpeg&quality=10&cursor=0")
    assert len(low.body) < len(jpeg.body)


def test_shot_draws_the_cursor(box, display):
    display.run(["xsetroot", "-solid", "#000000"])
    status, _ = box.call("POST", "/v1/screen/input", {"actions": [{"type": "move", "x": 600, "y": 500}]})
    assert status == 200
    query = "?x=580&y=480&w=40&h=40"
    without = decode_rgb(shot(box, query + "&cursor=0").body)
    assert {pixel(without, x, y) for x in range(40) for y in range(40)} == {(0, 0, 0)}
    drawn = decode_rgb(shot(box, query).body)
    assert any(pixel(drawn, x, y) != (0, 0, 0) for x in range(40) for y in range(40))


@pytest.mark.parametrize("query", [
    "?format=gif", "?quality=0", "?quality=101", "?quality=abc", "?format=jpeg&quality=1.5",
    "?scale=0", "?scale=-1", "?scale=nan", "?scale=1e9", "?scale=", "?x=-1", "?x=1280",
    "?y=800", "?w=0", "?x=1200&w=100", "?h=801", "?cursor=2", "?x=1e3",
])
def test_shot_refuses_bad_parameters(box, query):
    answer = box.request("GET", "/v1/screen/shot" + query)
    assert answer.status == 400, (query, answer.body)
    error = answer.json()["error"]
    assert error["code"] == "bad_request" and error["message"]


def test_many_shots_keep_one_x_connection(box, pattern, display):
    shot(box, "?scale=0.1")
    before = display.client_count()
    for _ in range(300):
        shot(box, "?scale=0.1")
    assert display.client_count() == before


# ---- input ----

def read_lines(proc, count, timeout=20):
    """`count` lines from the events client, with a hard timeout (raw reads:
    a buffered readline would hide lines from select)."""
    import select
    fd = proc.stdout.fileno()
    data = b""
    deadline = time.monotonic() + timeout
    while data.count(b"\n") < count:
        assert time.monotonic() < deadline, f"got only {data!r}"
        if select.select([fd], [], [], 0.2)[0]:
            chunk = os.read(fd, 4096)
            assert chunk, f"client ended after {data!r}"
            data += chunk
    return data.decode().splitlines()[:count]


def test_move_click_scroll_and_drag(box, display):
    events = start_client(display, "--events")
    try:
        actions = [
            {"type": "move", "x": 10, "y": 20},
            {"type": "click"},
            {"type": "click", "button": "right", "count": 2},
            {"type": "move", "x": 300, "y": 400},
            {"type": "scroll", "dy": -2},
            {"type": "scroll", "dx": 1},
            {"type": "down", "button": "middle"},
            {"type": "up", "button": "middle"},
            {"type": "drag", "from": [100, 100], "to": [700, 500]},
            {"type": "wait", "ms": 10},
        ]
        status, answer = box.call("POST", "/v1/screen/input", {"actions": actions})
        assert status == 200 and answer == {"done": len(actions)}
        assert read_lines(events, 8) == [
            "button 1 10 20", "button 3 10 20", "button 3 10 20", "button 4 300 400",
            "button 4 300 400", "button 7 300 400", "button 2 300 400", "button 1 100 100",
        ]
        assert display.pointer() == (700, 500)
    finally:
        events.kill()


def test_keys_and_unicode_typing(box, display):
    events = start_client(display, "--events")
    try:
        text = "Hi ö€✓"
        status, answer = box.call("POST", "/v1/screen/input", {"actions": [
            {"type": "move", "x": 640, "y": 400},
            {"type": "key", "keys": "ctrl+shift+t"},
            {"type": "key", "keys": "Return"},
            {"type": "key", "keys": "F5"},
            {"type": "type", "text": text},
        ]})
        assert status == 200 and answer["done"] == 5
        lines = read_lines(events, 5 + 1 + len(text))  # the H needs a shift press
        keysyms = [int(line.split()[1], 16) for line in lines]
        states = [int(line.split()[2], 16) for line in lines]
        # ctrl+shift+t: Control_L, Shift_L, then T with shift and control held.
        assert keysyms[:3] == [0xffe3, 0xffe1, ord("T")] and states[2] & 0x5 == 0x5
        assert keysyms[3] == 0xff0d and keysyms[4] == 0xffc2
        typed = [k for k in keysyms[5:] if k not in (0xffe1,)]
        as_text = "".join(chr(k - 0x01000000 if k > 0x01000000 else k) for k in typed)
        assert as_text == text
    finally:
        events.kill()


def test_typing_into_a_terminal(box, display, tmp_path):
    out = tmp_path / "typed.txt"
    env = dict(display.env(), LANG="C.UTF-8", LC_ALL="C.UTF-8")
    term = subprocess.Popen(["xterm", "-u8", "-geometry", "80x10+0+0", "-e",
                             f"stty -echo; cat > {out}"], env=env)
    try:
        wait_for(lambda: display.run(["xdotool", "search", "--class", "xterm"], check=False).returncode == 0,
                 what="the xterm window")
        time.sleep(0.5)  # the shell inside needs a moment to run stty
        text = "echo hello, wörld ✓ €5"
        status, answer = box.call("POST", "/v1/screen/input", {"actions": [
            {"type": "move", "x": 100, "y": 60},
            {"type": "type", "text": text + "\n"},
            {"type": "key", "keys": "ctrl+d"},
        ]})
        assert status == 200 and answer["done"] == 3
        wait_for(lambda: out.exists() and out.read_text(encoding="utf-8") == text + "\n",
                 what=f"the terminal to receive the text (got {out.read_bytes() if out.exists() else None!r})")
    finally:
        term.kill()


@pytest.mark.parametrize("body", [
    {}, {"actions": "click"}, {"actions": [{"type": "teleport"}]}, {"actions": [{}]},
    {"actions": [1]}, {"actions": [{"type": "move", "x": -5, "y": 1}]},
    {"actions": [{"type": "move", "x": 1e10, "y": 1}]}, {"actions": [{"type": "move", "x": 1.5, "y": 1}]},
    {"actions": [{"type": "move", "x": "1", "y": 1}]}, {"actions": [{"type": "click", "button": "foo"}]},
    {"actions": [{"type": "click", "count": 4}]}, {"actions": [{"type": "wait", "ms": 999999}]},
    {"actions": [{"type": "key", "keys": "ctrl+nosuchkey"}]}, {"actions": [{"type": "key", "keys": ""}]},
    {"actions": [{"type": "key", "keys": "ctrl+"}]}, {"actions": [{"type": "key", "keys": "a+b+c+d+e+f+g+h+i"}]},
    {"actions": [{"type": "type"}]}, {"actions": [{"type": "type", "text": "x" * 70000}]},
    {"actions": [{"type": "drag", "from": [1], "to": [2, 3]}]}, {"actions": [{"type": "scroll", "dy": 1000}]},
    {"actions": [{"type": "move", "x": 1, "y": 1}] * 1001},
])
def test_input_refuses_bad_actions_before_doing_any(box, display, body):
    status, answer = box.call("POST", "/v1/screen/input", {"actions": [{"type": "move", "x": 5, "y": 5}]})
    assert status == 200
    bad = dict(body)
    if isinstance(bad.get("actions"), list):
        bad["actions"] = [{"type": "move", "x": 77, "y": 77}] + bad["actions"]
    status, answer = box.call("POST", "/v1/screen/input", bad)
    assert status == 400 and answer["error"]["code"] == "bad_request", answer
    assert display.pointer() == (5, 5)


def test_input_body_not_json(box):
    answer = box.request("POST", "/v1/screen/input", b"{not json")
    assert answer.status == 400


# ---- lock ----

def test_lock_refuses_input_and_record_but_not_shots(box, display):
    assert box.call("PUT", "/v1/lock", {"locked": True})[0] == 200
    status, answer = box.call("POST", "/v1/screen/input", {"actions": [{"type": "click"}]})
    assert status == 423 and answer["error"]["code"] == "locked"
    status, answer = box.call("POST", "/v1/screen/record/start", {})
    assert status == 423
    assert box.request("GET", "/v1/screen/shot?scale=0.1").status == 200
    assert box.call("PUT", "/v1/lock", {"locked": False})[0] == 200
    assert box.call("POST", "/v1/screen/input", {"actions": [{"type": "click"}]})[0] == 200
