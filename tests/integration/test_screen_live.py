"""The live screen (API.md "Screen", GET /v1/screen/live) and the takeover
token (API.md "Lock") against a real Xvfb and a real boxd."""
import os
import re
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import MEMORY_SCALE, assert_error, wait_for  # noqa: E402
from live_helpers import (Filler, LiveViewer, cpu_seconds, decode_errors, decoded_colours,  # noqa: E402
                          near, rss_kib, thread_count)
from screen_helpers import BOXCTL_BIN, PATTERN_BIN, Display, box, display, probe_video, worker_pid  # noqa: E402

# Under ASan everything is slower; the latency bound scales with it.
SLOW = MEMORY_SCALE
# A point of the screen away from where the pointer rests (the middle).
SPOT = (100, 100)



@pytest.fixture
def filler(display):
    f = Filler(PATTERN_BIN, display.env())
    yield f
    f.close()


@pytest.fixture
def viewers(box):
    made = []

    def make(query="", **kwargs):
        viewer = LiveViewer(box.socket, query, **kwargs)
        made.append(viewer)
        return viewer

    yield make
    for viewer in made:
        viewer.close()


def start_client(display, *args):
    proc = subprocess.Popen([PATTERN_BIN, *args], env=display.env(), stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"ready\n"
    return proc


def viewer_path(viewer):
    return f"/tmp/boxd-live-{os.getpid()}-{id(viewer)}.mp4"


def probe(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,width,height",
                          "-of", "csv=p=0", path], capture_output=True, text=True)
    return out.returncode, out.stdout.strip()


# ---- the stream ----

def test_ffprobe_reads_the_stream_while_it_is_written(box, viewers, filler, tmp_path):
    path = str(tmp_path / "live.mp4")
    viewer = viewers(file_path=path)
    viewer.wait_fragments(1)
    assert viewer.status == 200
    # The codec's name (RFC 6381) for a Media Source Extensions player.
    assert re.fullmatch(r'video/mp4; codecs="avc1\.[0-9a-f]{6}"', viewer.headers["content-type"])
    assert (viewer.headers["x-width"], viewer.headers["x-height"]) == ("1280", "800")
    assert abs(viewer.started_at() - time.time() * 1000) < 10000
    # The file is still growing (the connection is open): ffprobe reads it.
    assert probe(path) == (0, "h264,1280,800")
    assert viewer.fragments[0][2], "the first fragment is a keyframe"
    for colour in [(255, 0, 0), (0, 0, 255)]:
        filler.fill(colour)
        time.sleep(0.2)
    viewer.wait_fragments(3)
    assert not viewer.ended
    frames = decoded_colours(viewer.snapshot(str(tmp_path / "so-far.mp4")), *SPOT)
    assert near(frames[-1][1], (0, 0, 255)), frames[-3:]
    # Decode times only grow, and the timeline has no holes: each fragment
    # starts where the previous one ends (fillers cover still spells).
    times = [f[1] for f in viewer.fragments]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert decode_errors(path) == ""


def test_a_colour_change_shows_within_100_ms(box, viewers, filler, tmp_path):
    viewer = viewers()
    viewer.wait_fragments(1)
    changes = []
    colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (0, 255, 255)] * 2
    for colour in colours:
        time.sleep(0.25)
        changes.append((filler.fill(colour), colour))
    time.sleep(0.5)
    frames = decoded_colours(viewer.snapshot(str(tmp_path / "live.mp4")), *SPOT)
    start = viewer.started_at()
    shown, arrived = [], []
    for changed_at, colour in changes:
        # The first decoded frame showing the new colour, by the stream's own
        # timestamps (X-Started-At + pts): when it was on the screen.
        pts = min(p for p, c in frames if start + p >= changed_at - 50 and near(c, colour))
        shown.append(start + pts - changed_at)
        arrived.append(next(a * 1000 for a, p, _, _ in viewer.fragments if abs(p - pts) < 0.5) - changed_at)
    # The target holds for the typical change; on a shared 2-core machine
    # one change in ten may wait for a core (bench/bench_live.py measures the
    # tail), but never long.
    assert sorted(shown)[len(shown) // 2] <= 100 * SLOW, f"change to frame (ms): {shown}"
    assert max(shown) <= 300 * SLOW, f"change to frame (ms): {shown}"
    assert sorted(arrived)[len(arrived) // 2] <= 150 * SLOW, f"change to bytes (ms): {arrived}"
    assert max(arrived) <= 500 * SLOW, f"change to bytes at the viewer (ms): {arrived}"


def test_scale_and_fps(box, viewers, display, tmp_path):
    viewer = viewers("?scale=0.5&fps=5")
    viewer.wait_fragments(1)
    assert (viewer.headers["x-width"], viewer.headers["x-height"]) == ("640", "400")
    animation = start_client(display, "--animate", "30")
    try:
        time.sleep(2.5)
    finally:
        animation.kill()
        animation.wait()
    info = probe_video(viewer.snapshot(str(tmp_path / "small.mp4")))
    assert (info["width"], info["height"]) == (640, 400)
    times = [f[1] for f in viewer.fragments[1:]]
    gaps = [b - a for a, b in zip(times, times[1:])]
    # At most 5 frames a second, however fast the screen moves. A frame
    # grabbed late (a loaded machine) is preceded by a filler: the previous
    # picture again, starting exactly one interval after it (live.c), so a
    # short gap may only follow a gap of exactly one interval.
    assert gaps, times
    for i, gap in enumerate(gaps):
        assert gap >= 199 or (i > 0 and abs(gaps[i - 1] - 200) <= 1), gaps
    assert 5 <= len(times) <= 16, times


@pytest.mark.parametrize("query", ["?fps=0", "?fps=61", "?fps=abc", "?fps=1e1", "?fps=", "?scale=0",
                                   "?scale=1.5", "?scale=-1", "?scale=x", "?scale=nan", "?scale=1e-3",
                                   "?scale=0.001", "?fps=%2B5", "?fps=30.5"])
def test_bad_parameters(box, query):
    status, body = box.call("GET", "/v1/screen/live" + query)
    assert_error((status, body), 400, "bad_request", query)


def test_two_viewers_and_a_recording(box, viewers, display, tmp_path):
    first = viewers()
    second = viewers()
    other = viewers("?fps=10&scale=0.5")
    status, recording = box.call("POST", "/v1/screen/record/start", {"fps": 10})
    assert status == 200, recording
    animation = start_client(display, "--animate", "20")
    try:
        time.sleep(3)
    finally:
        animation.kill()
        animation.wait()
    status, stopped = box.call("POST", "/v1/screen/record/stop")
    assert status == 200 and stopped["frames"] >= 10, stopped
    for viewer, size in [(first, (1280, 800)), (second, (1280, 800)), (other, (640, 400))]:
        assert len(viewer.fragments) >= 10, len(viewer.fragments)
        info = probe_video(viewer.snapshot(str(tmp_path / f"v{id(viewer)}.mp4")))
        assert (info["width"], info["height"]) == size and info["nb_read_frames"] >= 10, info
    # The two viewers with the same settings shared one capture and encoder:
    # boxd started two live views, not three, and the same bytes reached both.
    assert box.log().count("live view") - box.log().count("ended") >= 2
    assert sum(1 for line in box.log().splitlines() if " started: " in line and "live view" in line) == 2
    common = {f[1] for f in first.fragments} & {f[1] for f in second.fragments}
    assert len(common) >= 10
    assert probe_video(stopped["path"])["nb_read_frames"] >= 10


def test_a_late_viewer_starts_at_a_keyframe(box, viewers, display, filler, tmp_path):
    early = viewers()
    early.wait_fragments(1)
    filler.fill((255, 0, 0))
    time.sleep(1)
    late = viewers()
    late.wait_fragments(1, timeout=3)
    assert late.fragments[0][2], "a new viewer's first fragment is a keyframe"
    # It was made for the late viewer now, not taken from the past.
    assert late.fragments[0][0] - late.started_at() / 1000 > 0.9
    frames = decoded_colours(late.snapshot(str(tmp_path / "late.mp4")), *SPOT)
    assert near(frames[0][1], (255, 0, 0)), frames[:2]


def test_a_viewer_that_stops_reading_does_not_grow_boxd(boxd_factory, display, tmp_path):
    # Under ASan, freed memory waits in a quarantine (256 MiB by default)
    # before reuse, so megabytes a second of fragments would grow the RSS
    # however boxd holds them: a small quarantine keeps the figure boxd's.
    asan = os.environ.get("ASAN_OPTIONS", "")
    box = boxd_factory(env={"BOXD_TEST_DISPLAY": display.display,
                            "ASAN_OPTIONS": f"{asan}:quarantine_size_mb=4".lstrip(":")})
    reader = LiveViewer(box.socket, "?fps=10")
    stalled = LiveViewer(box.socket, "?fps=10", read=False, receive_buffer=4096)
    try:
        stalled_viewer_checks(box, display, tmp_path, reader, stalled)
    finally:
        reader.close()
        stalled.close()


def stalled_viewer_checks(box, display, tmp_path, reader, stalled):
    reader.wait_fragments(1)
    # Random pixels: some hundreds of KiB a frame, megabytes a second.
    animation = start_client(display, "--noise", "10")
    try:
        time.sleep(2)
        before = rss_kib(box.proc.pid)
        time.sleep(4)
        after = rss_kib(box.proc.pid)
    finally:
        animation.kill()
        animation.wait()
    # The stalled viewer holds at most about a MiB of fragments in boxd.
    assert after - before < 4096 * MEMORY_SCALE, (before, after)
    # The reading viewer got everything meanwhile, several MiB of it.
    assert sum(f[3] for f in reader.fragments) > 4 << 20 and len(reader.fragments) > 30
    # Once the stalled one reads, it goes on from a keyframe and decodes cleanly.
    stalled.start_reading()
    filler_proc = Filler(PATTERN_BIN, display.env())
    try:
        filler_proc.fill((0, 0, 255))
        wait_for(lambda: any(f[2] and f[0] > time.time() - 5 for f in stalled.fragments[1:]), timeout=10,
                 what="the stalled viewer to get a keyframe")
        filler_proc.fill((0, 255, 0))
        time.sleep(0.5)
    finally:
        filler_proc.close()
    path = stalled.snapshot(str(tmp_path / "stalled.mp4"))
    assert decode_errors(path) == ""
    assert len(stalled.fragments) < len(reader.fragments)


def test_a_still_screen_costs_nothing(box, viewers, filler):
    viewer = viewers()
    viewer.wait_fragments(1)
    filler.fill((40, 80, 120))
    time.sleep(0.5)
    worker = worker_pid(box)
    cpu_before, since = cpu_seconds(worker), time.time()
    time.sleep(4)
    cpu_used = cpu_seconds(worker) - cpu_before
    assert viewer.bytes_after(since) == 0, viewer.fragments[-3:]
    assert cpu_used <= 0.03 * SLOW, f"the worker used {cpu_used:.3f} s of CPU in 4 s of a still screen"
    # And a change after the still spell comes through at once.
    changed_at = filler.fill((200, 10, 10)) / 1000
    wait_for(lambda: viewer.bytes_after(changed_at) > 0, timeout=2, what="the change")


def test_leaving_is_noticed_at_once_and_the_capture_stops(box, viewers, filler):
    viewer = viewers()
    viewer.wait_fragments(1)
    worker = worker_pid(box)
    watching = thread_count(worker)
    viewer.close()  # on a still screen: nothing is being written to it
    wait_for(lambda: thread_count(worker) == watching - 1, timeout=2, what="the capture thread to end")
    # A new viewer starts a new capture at once.
    again = viewers()
    again.wait_fragments(1, timeout=3)
    assert thread_count(worker) == watching


def test_the_stream_ends_when_the_display_goes(box, viewers, display):
    viewer = viewers()
    viewer.wait_fragments(1)
    display.kill()
    # The chunked answer ends properly (a 0-length chunk), at once.
    wait_for(lambda: viewer.ended, timeout=10, what="the stream to end")
    assert viewer.error_body == b"" and probe(viewer.snapshot(viewer_path(viewer)))[0] == 0


def test_boxctl_live(box, display, filler, tmp_path):
    path = str(tmp_path / "out.mp4")
    env = dict(os.environ, BOXD_SOCKET=box.socket)
    proc = subprocess.Popen([BOXCTL_BIN, "live", "-o", path, "--fps", "10", "--scale", "0.5",
                             "--seconds", "3"], env=env, stderr=subprocess.PIPE)
    time.sleep(1)
    filler.fill((255, 0, 0))
    # Readable while it grows.
    wait_for(lambda: probe(path) == (0, "h264,640,400"), timeout=5, what="a readable file")
    assert proc.wait(timeout=10) == 0, proc.stderr.read()
    frames = decoded_colours(path, 50, 50)
    assert near(frames[-1][1], (255, 0, 0)), frames[-2:]
    bad = subprocess.run([BOXCTL_BIN, "live", "-o", path, "--fps", "0"], env=env, capture_output=True, text=True)
    assert bad.returncode == 1 and "fps" in bad.stderr
    assert subprocess.run([BOXCTL_BIN, "live"], env=env, capture_output=True).returncode == 2


# ---- takeover ----

def test_the_token_lets_the_persons_input_through_and_nothing_else(box, display):
    clicks = start_client(display, "--events")
    try:
        status, lock = box.call("PUT", "/v1/lock", {"locked": True, "note": "logging in"})
        assert status == 200 and len(lock["token"]) == 32, lock
        token = lock["token"]
        assert "token" not in box.call("GET", "/v1/lock")[1]
        click = {"actions": [{"type": "move", "x": 150, "y": 160}, {"type": "click"}]}
        assert_error(box.call("POST", "/v1/screen/input", click), 423, "locked")
        for wrong in ["", "0" * 32, token[:-1], token + "0", token.upper()]:
            assert_error(box.call("POST", "/v1/screen/input", click, headers={"X-Takeover": wrong}),
                         423, "locked", wrong)
        status, done = box.call("POST", "/v1/screen/input", click, headers={"X-Takeover": token})
        assert status == 200 and done == {"done": 2}, done
        assert clicks.stdout.readline() == b"button 1 150 160\n"
        # Everything else stays locked, token or not.
        with_token = {"X-Takeover": token}
        assert_error(box.call("POST", "/v1/exec", {"cmd": "true"}, headers=with_token), 423, "locked")
        assert_error(box.call("POST", "/v1/screen/record/start", {}, headers=with_token), 423, "locked")
        assert_error(box.call("POST", "/v1/uploads?dest=app", headers=with_token), 423, "locked")
        # Another lock while locked is refused, never told the token; a new
        # lock after the hand-back makes a new one.
        status, again = box.call("PUT", "/v1/lock", {"locked": True, "note": "still"})
        assert status == 409 and token not in str(again), again
        box.call("PUT", "/v1/lock", {"locked": False})
        status, relocked = box.call("PUT", "/v1/lock", {"locked": True})
        assert relocked["token"] != token
        assert_error(box.call("POST", "/v1/screen/input", click, headers={"X-Takeover": token}),
                     423, "locked")
        steps = box.call("GET", "/v1/steps")[1]["steps"]
        assert any(s["kind"] == "input" and "takeover" in s["summary"] for s in steps), steps
        assert not any(token in s["summary"] for s in steps)
        assert token not in box.log()
    finally:
        clicks.kill()
        clicks.wait()
