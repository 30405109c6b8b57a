"""Screenshots of an unchanged screen served from the last encoding, strips
reused, and the screen worker's life: started ahead, retired when idle,
started again by the next request (docs/screen.md)."""
import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from screen_helpers import WORKER_BIN, Display, Worker, box, decode_rgb, display, pixel, worker_pid  # noqa: E402
from test_screen import start_client, wait_for  # noqa: E402



def shot(box, query=""):
    answer = box.request("GET", "/v1/screen/shot" + query)
    assert answer.status == 200, answer.body
    return answer


def cached(answer):
    return answer.headers.get("x-cached") == "1"


# ---- the last encoding, served again ----

def test_an_unchanged_screen_is_served_from_the_last_encoding(box, display):
    display.run(["xsetroot", "-solid", "#203040"])
    first = shot(box, "?cursor=0")
    second = shot(box, "?cursor=0")
    assert cached(second) and second.body == first.body
    assert pixel(decode_rgb(second.body), 5, 5) == (0x20, 0x30, 0x40)
    # quality means nothing to PNG: the same file.
    assert cached(shot(box, "?cursor=0&quality=7"))
    status, steps = box.call("GET", "/v1/steps")
    assert steps["steps"][-1]["summary"].endswith("(unchanged)")


def test_a_drawing_between_shots_gives_a_new_picture(box, display):
    display.run(["xsetroot", "-solid", "#203040"])
    shot(box, "?cursor=0")
    assert cached(shot(box, "?cursor=0"))
    display.run(["xsetroot", "-solid", "#c08010"])
    after = shot(box, "?cursor=0")
    assert not cached(after)
    assert pixel(decode_rgb(after.body), 640, 400) == (0xc0, 0x80, 0x10)
    assert cached(shot(box, "?cursor=0"))


@pytest.mark.parametrize("other", ["?cursor=0&scale=0.5", "?cursor=0&format=jpeg",
                                   "?cursor=0&x=1", "?cursor=0&w=640", "?cursor=1",
                                   "?cursor=0&format=jpeg&quality=30"])
def test_other_parameters_are_not_served_the_old_bytes(box, display, other):
    display.run(["xsetroot", "-solid", "#203040"])
    base = shot(box, "?cursor=0&format=jpeg&quality=90" if "quality=30" in other else "?cursor=0")
    answer = shot(box, other)
    assert not cached(answer) and answer.body != base.body
    width, height, _ = decode_rgb(answer.body)
    assert (str(width), str(height)) == (answer.headers["x-width"], answer.headers["x-height"])
    if "jpeg" in other:
        assert answer.body[:2] == b"\xff\xd8"
    # The new parameters' file is the one kept now.
    assert cached(shot(box, other))


def test_a_moved_pointer_is_not_served_the_old_bytes(box, display):
    display.run(["xsetroot", "-solid", "#000000"])
    move = lambda x, y: box.call("POST", "/v1/screen/input",  # noqa: E731
                                 {"actions": [{"type": "move", "x": x, "y": y}]})
    assert move(100, 100)[0] == 200
    shot(box, "?x=50&y=50&w=200&h=200")
    assert cached(shot(box, "?x=50&y=50&w=200&h=200"))
    assert move(180, 160)[0] == 200
    moved = shot(box, "?x=50&y=50&w=200&h=200")
    assert not cached(moved)
    decoded = decode_rgb(moved.body)
    drawn = {(x, y) for x in range(200) for y in range(200) if pixel(decoded, x, y) != (0, 0, 0)}
    assert drawn and min(x for x, _ in drawn) >= 100, "the cursor is drawn where the pointer is now"
    # Without the cursor, the pointer's move is no change at all.
    before = shot(box, "?cursor=0&x=50&y=50&w=200&h=200")
    assert move(20, 20)[0] == 200
    again = shot(box, "?cursor=0&x=50&y=50&w=200&h=200")
    assert cached(again) and again.body == before.body


def test_reused_strips_decode_as_a_fresh_encoding(box, display, tmp_path):
    pattern = start_client(display)
    term = None
    try:
        shot(box, "?cursor=0")
        # A small window over part of the screen: the strips it covers are
        # encoded again, the others reused.
        term = subprocess.Popen(["xterm", "-geometry", "30x6+700+300", "-e", "sleep 60"],
                                env=display.env(), stderr=subprocess.DEVNULL)
        wait_for(lambda: display.run(["xdotool", "search", "--onlyvisible", "--class", "xterm"],
                                     check=False).returncode == 0, what="the xterm window")
        time.sleep(0.5)
        ours = shot(box, "?cursor=0")
        assert not cached(ours)
        fresh = Worker(WORKER_BIN, display.display)
        try:
            answer, payload = fresh.call("shot", cursor=0)
            assert answer["ok"] and "cached" not in answer
        finally:
            fresh.close()
        ours_decoded, fresh_decoded = decode_rgb(ours.body), decode_rgb(payload)
        assert ours_decoded == fresh_decoded
        assert pixel(ours_decoded, 150, 150) == (0, 255, 0)
    finally:
        if term:
            term.kill()
        pattern.kill()
        pattern.wait()


def test_png_is_no_larger_than_scrot(box, display, tmp_path):
    pattern = start_client(display)
    try:
        ours = shot(box, "?cursor=0")
        theirs = tmp_path / "scrot.png"
        if subprocess.run(["which", "scrot"], capture_output=True).returncode != 0:
            pytest.skip("scrot is not installed (bench tools)")
        display.run(["scrot", "-o", str(theirs)])
        assert decode_rgb(ours.body) == decode_rgb(theirs.read_bytes())
        assert len(ours.body) <= os.path.getsize(theirs)
    finally:
        pattern.kill()
        pattern.wait()


# ---- the worker's life ----

def display_up(box):
    status, health = box.call("GET", "/v1/health")
    assert status == 200
    return health["display"]["up"]


def test_the_worker_starts_ahead_and_the_first_shot_is_warm(box, display):
    worker = wait_for(lambda: worker_pid(box), what="the worker started ahead")
    # Started with boxd, before any request; it warmed up on the default shot.
    answer = wait_for(lambda: (lambda a: a if a.status == 200 else None)(
        box.request("GET", "/v1/screen/shot")), what="a first shot")
    assert worker_pid(box) == worker
    assert cached(answer), "the first default shot of an unchanged screen is the warm-up's"


def test_no_worker_ahead_without_a_display(boxd_factory):
    box = boxd_factory()  # display :65000, no server there
    time.sleep(0.3)
    assert worker_pid(box) is None
    assert display_up(box) is False


def test_an_idle_worker_exits_and_the_next_request_starts_another(boxd_factory, display):
    # 3 s: the new worker below must outlive a few calls on a slow
    # (sanitized, loaded) machine before it leaves in turn.
    box = boxd_factory("--screen-idle", "3", env={"BOXD_TEST_DISPLAY": display.display})
    first = wait_for(lambda: worker_pid(box), what="the worker started ahead")
    assert shot(box, "?scale=0.1").status == 200
    # Health's display stays up while the worker goes.
    deadline = time.monotonic() + 15
    while worker_pid(box) is not None:
        assert time.monotonic() < deadline, "the idle worker did not exit"
        assert display_up(box) is True
        time.sleep(0.1)
    assert display_up(box) is True
    # Gone (a zombie counts as gone) before boxd has reaped it and said why.
    wait_for(lambda: "exited after 3 s unused" in box.log(), timeout=10,
             what="boxd to log the idle worker's exit")
    # Transparent: the next shot starts a new worker and works.
    display.run(["xsetroot", "-solid", "#0000ff"])
    answer = shot(box, "?cursor=0")
    second = worker_pid(box)
    assert second is not None and second != first
    assert pixel(decode_rgb(answer.body), 9, 9) == (0, 0, 255)
    assert display_up(box) is True
    # Input and a second shot go to the same new worker.
    assert box.call("POST", "/v1/screen/input", {"actions": [{"type": "move", "x": 3, "y": 3}]})[0] == 200
    assert cached(shot(box, "?cursor=0")) and worker_pid(box) == second


def test_a_recording_keeps_the_worker(boxd_factory, display):
    # 3 s: the new worker below must outlive a few calls on a slow
    # (sanitized, loaded) machine before it leaves in turn.
    box = boxd_factory("--screen-idle", "3", env={"BOXD_TEST_DISPLAY": display.display})
    mover = start_client(display, "--animate", "20")
    try:
        status, started = box.call("POST", "/v1/screen/record/start", {"fps": 10})
        assert status == 200, started
        worker = worker_pid(box)
        time.sleep(3)  # three idle times
        assert worker_pid(box) == worker
        status, stopped = box.call("POST", "/v1/screen/record/stop")
        assert status == 200 and stopped["endedBy"] == "stop", stopped
        # One worker all along: the recording's file is whole.
        assert stopped["durationMs"] >= 2900 and stopped["frames"] >= 10
        # Once nothing records, the quiet time runs and the worker goes.
        wait_for(lambda: worker_pid(box) is None, timeout=15, what="the worker to exit after the recording")
    finally:
        mover.kill()
        mover.wait()


def test_a_worker_with_no_idle_time_stays(boxd_factory, display):
    box = boxd_factory("--screen-idle", "0", env={"BOXD_TEST_DISPLAY": display.display})
    worker = wait_for(lambda: worker_pid(box), what="the worker started ahead")
    time.sleep(1.5)
    assert worker_pid(box) == worker


@pytest.mark.parametrize("value", ["-1", "abc", "86401", "1.5", ""])
def test_screen_idle_refuses_bad_values(tmp_path, value):
    from conftest import BOXD
    result = subprocess.run([BOXD, "--work-dir", str(tmp_path / "w"), "--run-dir", str(tmp_path / "r"),
                             "--vsock-port", "off", "--screen-idle", value],
                            capture_output=True, text=True, timeout=10)
    assert result.returncode == 2 and "--screen-idle" in result.stderr


def test_the_worker_says_when_it_is_idle(display):
    worker = Worker(WORKER_BIN, display.display, extra=["--idle-exit", "1"])
    try:
        assert worker.wait_event("display")["up"] is True
        started = time.monotonic()
        idle = worker.wait_event("idle", timeout=10)
        assert idle["quietMs"] >= 1000 and time.monotonic() - started < 5
        # Still answering (boxd, not the worker, decides to close); a request
        # starts the quiet time again, and it says so once more.
        answer, _ = worker.call("status")
        assert answer["up"] is True and answer["shotsEncoded"] == 0
        assert worker.wait_event("idle", timeout=10)["quietMs"] >= 1000
        answer, _ = worker.call("shot", scale=0.1)
        answer, _ = worker.call("shot", scale=0.1)
        assert answer["cached"] is True
        answer, _ = worker.call("status")
        assert (answer["shotsEncoded"], answer["shotsCached"]) == (1, 1)
    finally:
        assert worker.close() == 0
