"""Screen: shots, input and recordings against a real Xvfb (API.md "Screen")."""
import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import assert_error  # noqa: E402
from screen_helpers import (BOXCTL_BIN, PATTERN_BIN, WORKER_BIN, Display, Worker, Xvfb, box, display,  # noqa: E402
                            decode_rgb, pixel, probe_video, worker_pid)



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
    "?scale=0", "?scale=-1", "?scale=nan", "?scale=1e9", "?scale=", "?scale=1e400", "?x=99999999999999999999999", "?x=-1", "?x=1280",
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
        wait_for(lambda: display.run(["xdotool", "search", "--onlyvisible", "--class", "xterm"],
                                     check=False).returncode == 0, what="the xterm window")
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
    {"actions": [{"type": "move", "x": 1e10, "y": 1}]}, {"actions": [{"type": "move", "x": 1e300, "y": 1}]},
    {"actions": [{"type": "move", "x": 1.5, "y": 1}]},
    {"actions": [{"type": "move", "x": "1", "y": 1}]}, {"actions": [{"type": "click", "button": "foo"}]},
    {"actions": [{"type": "click", "count": 4}]}, {"actions": [{"type": "wait", "ms": 999999}]},
    {"actions": [{"type": "key", "keys": "ctrl+nosuchkey"}]}, {"actions": [{"type": "key", "keys": ""}]},
    {"actions": [{"type": "key", "keys": "ctrl+"}]}, {"actions": [{"type": "key", "keys": "a+b+c+d+e+f+g+h+i"}]},
    {"actions": [{"type": "type"}]}, {"actions": [{"type": "type", "text": "x" * 17000}]},
    {"actions": [{"type": "drag", "from": [1], "to": [2, 3]}]}, {"actions": [{"type": "scroll", "dy": 1000}]},
    {"actions": [{"type": "move", "x": 1, "y": 1}] * 1001},
    {"actions": [{"type": "wait", "ms": 40000}, {"type": "wait", "ms": 40000}]},
    {"actions": [{"type": "type", "text": "x" * 9000}, {"type": "type", "text": "y" * 9000}]},
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
    assert_error((status, answer), 423, "locked")
    assert box.request("GET", "/v1/screen/shot?scale=0.1").status == 200
    assert box.call("PUT", "/v1/lock", {"locked": False})[0] == 200
    assert box.call("POST", "/v1/screen/input", {"actions": [{"type": "click"}]})[0] == 200


# ---- recording ----

def record_start(box, **body):
    status, answer = box.call("POST", "/v1/screen/record/start", body)
    assert status == 200, answer
    assert answer["recordingId"].startswith("r_")
    assert answer["path"].startswith(os.path.join(box.work_dir, ".sbx", "recordings") + "/")
    assert os.path.getsize(answer["path"]) > 0  # the first frame is in before the answer
    return answer


def test_recording_of_a_moving_picture(box, display):
    mover = start_client(display, "--animate", "30")
    try:
        started = record_start(box, fps=30)
        status, answer = box.call("POST", "/v1/screen/record/start", {})
        assert status == 409 and answer["error"]["code"] == "conflict"
        status, health = box.call("GET", "/v1/health")
        assert health["recording"] is True
        status, progress = box.call("GET", "/v1/screen/record")
        assert progress["recording"] is True and progress["recordingId"] == started["recordingId"]
        time.sleep(3)
        status, stopped = box.call("POST", "/v1/screen/record/stop")
        assert status == 200, stopped
        assert stopped["path"] == started["path"]
        assert stopped["bytes"] == os.path.getsize(stopped["path"])
        assert 2900 <= stopped["durationMs"] <= 6000
        video = probe_video(stopped["path"])
        assert video["codec_name"] == "h264" and video["pix_fmt"] == "yuv420p"
        assert (video["width"], video["height"]) == (1280, 800)
        # The picture changes (almost) every slot, so (almost) every slot is a
        # coded frame; a slot whose grab saw no change is held, not coded.
        assert video["nb_read_frames"] == stopped["frames"]
        slots = round(stopped["durationMs"] * 30 / 1000)
        assert slots / 2 <= stopped["frames"] + stopped["droppedFrames"] <= slots
        assert abs(video["duration"] - stopped["durationMs"] / 1000) < 0.2
        assert box.call("GET", "/v1/health")[1]["recording"] is False
        assert box.call("GET", "/v1/screen/record")[1] == {"recording": False}
        status, answer = box.call("POST", "/v1/screen/record/stop")
        assert_error((status, answer), 409, "conflict")
    finally:
        mover.kill()


def test_recording_of_a_still_screen_is_cheap_and_keeps_time(box, pattern):
    record_start(box, fps=30)
    time.sleep(2.5)
    status, stopped = box.call("POST", "/v1/screen/record/stop")
    video = probe_video(stopped["path"])
    assert video["codec_name"] == "h264"
    # Unchanged frames are not coded again, but the file lasts the whole time.
    assert stopped["frames"] <= 5
    assert abs(video["duration"] - stopped["durationMs"] / 1000) < 0.2
    assert stopped["durationMs"] >= 2400


def coded_frames_rgb(path, width=1280, height=800):
    """Every frame coded in the file, decoded to rgb24 (what a player shows)."""
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-vsync", "passthrough", "-f", "rawvideo",
                          "-pix_fmt", "rgb24", "-"], capture_output=True, check=True).stdout
    size = width * height * 3
    return [(width, height, raw[at:at + size]) for at in range(0, len(raw) - size + 1, size)]


def test_recording_of_a_still_screen_follows_the_pointer(box, display):
    # Nothing is drawn while the pointer moves (the server draws its sprite
    # apart from the screen's pixels): the recording must still show it.
    display.run(["xsetroot", "-solid", "#000000"])
    box.call("POST", "/v1/screen/input", {"actions": [{"type": "move", "x": 100, "y": 100}]})
    record_start(box, fps=10)
    time.sleep(0.4)
    status, _ = box.call("POST", "/v1/screen/input", {"actions": [{"type": "move", "x": 600, "y": 500}]})
    assert status == 200
    time.sleep(0.5)
    status, stopped = box.call("POST", "/v1/screen/record/stop")
    assert status == 200, stopped
    frames = coded_frames_rgb(stopped["path"])
    assert len(frames) == stopped["frames"] >= 2

    def lit(frame, x0, y0):
        return any(max(pixel(frame, x, y)) > 60 for x in range(x0 - 5, x0 + 20) for y in range(y0 - 5, y0 + 20))
    assert lit(frames[0], 100, 100) and not lit(frames[0], 600, 500)
    assert lit(frames[-1], 600, 500) and not lit(frames[-1], 100, 100)


def test_recording_ends_at_max_sec(box, pattern):
    record_start(box, fps=10, maxSec=1)
    wait_for(lambda: box.call("GET", "/v1/health")[1]["recording"] is False, what="maxSec")
    status, stopped = box.call("POST", "/v1/screen/record/stop")
    assert status == 200 and stopped["endedBy"] == "maxSec"
    assert 500 <= stopped["durationMs"] <= 1000
    assert probe_video(stopped["path"])["codec_name"] == "h264"
    # A new one may start.
    record_start(box, fps=5)
    assert box.call("POST", "/v1/screen/record/stop")[0] == 200


@pytest.mark.parametrize("body", [
    {"fps": 0}, {"fps": 61}, {"fps": "abc"}, {"fps": 2.5}, {"maxSec": 0}, {"maxSec": -1},
    {"maxSec": 10 ** 9}, {"maxSec": 1e300}, {"fps": -1e300},
])
def test_record_start_refuses_bad_settings(box, display, body):
    status, answer = box.call("POST", "/v1/screen/record/start", body)
    assert status == 400 and answer["error"]["code"] == "bad_request", answer
    assert box.call("GET", "/v1/health")[1]["recording"] is False
    assert os.listdir(os.path.join(box.work_dir, ".sbx", "recordings")) == []


def kill_mid_recording(box, display, victim):
    mover = start_client(display, "--animate", "30")
    try:
        started = record_start(box, fps=30)
        time.sleep(3.5)
        if victim == "boxd":
            box.kill(signal.SIGKILL)
        else:
            worker = worker_pid(box)
            os.kill(worker, signal.SIGKILL)
            wait_for(lambda: worker_pid(box) is None, what="the worker to die")
    finally:
        mover.kill()
    return started["path"]


def test_recording_survives_kill_9_of_boxd(box, display):
    path = kill_mid_recording(box, display, "boxd")
    # The worker sees boxd's end close and finishes the file itself.
    video = wait_for(lambda: probe_video(path), what="a playable file")
    assert video["codec_name"] == "h264"
    # Slept 3.5 s; even a starved recording (frames dropped) keeps wall-clock time.
    assert video["duration"] >= 2.0 and video["nb_read_frames"] >= 10


def test_recording_survives_kill_9_of_the_writer(box, display):
    path = kill_mid_recording(box, display, "worker")
    video = probe_video(path)
    assert video is not None and video["codec_name"] == "h264"
    # Fragments are cut every second: at most the last second (of 3.5) is lost.
    assert video["duration"] >= 1.5 and video["nb_read_frames"] >= 10
    # boxd noticed; the next stop reports the cut recording, and the screen works on.
    assert box.call("GET", "/v1/health")[1]["recording"] is False
    status, stopped = box.call("POST", "/v1/screen/record/stop")
    assert status == 200 and stopped["path"] == path
    assert shot(box, "?scale=0.1").status == 200


# ---- the X server going away ----

def test_x_server_killed_and_restarted(box, display):
    assert shot(box, "?scale=0.1").status == 200
    display.kill()
    answer = wait_for(lambda: (lambda a: a if a.status != 200 else None)(
        box.request("GET", "/v1/screen/shot?scale=0.1")), what="an error while X is down")
    assert answer.status == 503 and answer.json()["error"]["code"] == "display_unavailable"
    answer = box.request("GET", "/v1/screen/shot?scale=0.1")
    assert answer.status == 503 and answer.json()["error"]["code"] == "display_unavailable"
    status, answer = box.call("POST", "/v1/screen/input", {"actions": [{"type": "click"}]})
    assert status == 503 and answer["error"]["code"] == "display_unavailable"
    assert box.proc.poll() is None
    display.start()
    display.run(["xsetroot", "-solid", "#00ff00"])
    answer = wait_for(lambda: (lambda a: a if a.status == 200 else None)(
        box.request("GET", "/v1/screen/shot?cursor=0")), what="shots to work again")
    assert pixel(decode_rgb(answer.body), 10, 10) == (0, 255, 0)
    assert box.proc.poll() is None


def test_recording_cut_by_the_x_server_going_away(box, display):
    started = record_start(box, fps=10)
    time.sleep(1.5)
    display.kill()
    wait_for(lambda: box.call("GET", "/v1/health")[1]["recording"] is False, what="the recording to end")
    status, stopped = box.call("POST", "/v1/screen/record/stop")
    assert status == 200 and stopped["path"] == started["path"]
    assert probe_video(started["path"])["codec_name"] == "h264"


# ---- the worker on its own (its socketpair protocol) ----

def test_worker_protocol_directly(display):
    worker = Worker(WORKER_BIN, display.display)
    try:
        assert worker.wait_event("display")["up"] is True
        answer, payload = worker.call("shot", scale=0.25)
        assert answer["ok"] and answer["width"] == 320 and payload[:4] == b"\x89PNG"
        answer, _ = worker.call("nonsense")
        assert answer["error"]["code"] == "bad_request"
        answer, _ = worker.call("status")
        assert answer["up"] is True and answer["shm"] is True
    finally:
        assert worker.close() == 0


def test_worker_waits_for_a_display_that_is_not_there_yet(tmp_path):
    from screen_helpers import free_display
    number = free_display(400 + os.getpid() % 100)
    worker = Worker(WORKER_BIN, f":{number}")
    server = None
    try:
        assert worker.wait_event("display")["up"] is False
        answer, _ = worker.call("shot")
        assert answer["error"]["code"] == "display_unavailable"
        server = Xvfb(number=number)
        # inotify on /tmp/.X11-unix: the worker connects by itself.
        assert worker.wait_event("display", up=True)["width"] == 1280
    finally:
        worker.close()
        if server:
            server.kill()


# ---- boxctl ----

def boxctl(box, *args):
    return subprocess.run([BOXCTL_BIN, "--socket", box.socket, *args], capture_output=True, timeout=60)


def test_boxctl_shot_input_record(box, display, tmp_path):
    display.run(["xsetroot", "-solid", "#ff0000"])
    out = tmp_path / "s.png"
    result = boxctl(box, "shot", "-o", str(out), "--scale", "0.5")
    assert result.returncode == 0, result.stderr
    assert decode_rgb(out.read_bytes())[:2] == (640, 400)
    result = boxctl(box, "shot", "-o", "-", "--jpeg")
    assert result.returncode == 0 and result.stdout[:2] == b"\xff\xd8"
    result = boxctl(box, "input", "move", "10", "20", "click", "scroll", "-1", "key", "ctrl+l",
                    "type", "hello", "drag", "1", "2", "30", "40", "move", "33", "44")
    assert result.returncode == 0, result.stderr
    assert b"done: 7" in result.stdout
    assert display.pointer() == (33, 44)
    assert boxctl(box, "input", "jump").returncode == 2
    assert boxctl(box, "input", "move", "1").returncode == 2
    result = boxctl(box, "record", "start", "--fps", "5")
    assert result.returncode == 0 and b"recording r_" in result.stdout
    assert boxctl(box, "record", "start").returncode == 1
    result = boxctl(box, "record", "stop")
    assert result.returncode == 0 and b".mp4" in result.stdout
    assert boxctl(box, "record", "stop").returncode == 1


def test_input_with_a_request_id_runs_once(box, display):
    events = start_client(display, "--events")
    try:
        body = {"actions": [{"type": "move", "x": 50, "y": 50}, {"type": "click"}]}
        headers = {"X-Request-Id": "click-once"}
        first = box.request("POST", "/v1/screen/input", body, headers)
        second = box.request("POST", "/v1/screen/input", body, headers)
        assert first.status == second.status == 200 and first.body == second.body
        box.call("POST", "/v1/screen/input", {"actions": [{"type": "click", "button": "right"}]})
        # One left click, then the right one: the repeat did not click again.
        assert read_lines(events, 2) == ["button 1 50 50", "button 3 50 50"]
    finally:
        events.kill()


def test_screen_work_shows_in_steps(box, display):
    shot(box, "?scale=0.1")
    box.call("POST", "/v1/screen/input", {"actions": [{"type": "type", "text": "secret words"}]})
    record_start(box, fps=5)
    box.call("POST", "/v1/screen/record/stop")
    status, answer = box.call("GET", "/v1/steps")
    kinds = [step["kind"] for step in answer["steps"]]
    assert kinds[-4:] == ["shot", "input", "record", "record"]
    # Typed text is not repeated in steps, only its size.
    assert "secret words" not in str(answer) and "type (12 bytes)" in answer["steps"][-3]["summary"]


def test_boxd_links_neither_x11_nor_ffmpeg():
    from screen_helpers import BUILD_DIR
    libraries = subprocess.run(["ldd", os.path.join(BUILD_DIR, "boxd", "boxd")], capture_output=True,
                               text=True, check=True).stdout
    for name in ("libX11", "libavcodec", "libavformat", "libswscale", "libxcb"):
        assert name not in libraries, f"boxd links {name}; X11 and codec work belongs in boxd-screen"
