"""The clipboard: GET/PUT /v1/screen/clipboard against a real Xvfb, with
xclip, xterm and xdotool on the other side (API.md "Screen", docs/screen.md
"Clipboard")."""
import os
import shutil
import signal
import subprocess
import sys
import time
import zlib
import struct

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import assert_error, wait_for  # noqa: E402
from screen_helpers import WORKER_BIN, Worker, box, display, worker_pid  # noqa: E402,F401

pytestmark = pytest.mark.skipif(shutil.which("xclip") is None,
                                reason="xclip is not installed (packaging/install-deps installs it)")

PATH = "/v1/screen/clipboard"


def put(box, data, selection=None, content_type="text/plain; charset=utf-8", headers=None):
    query = f"?selection={selection}" if selection else ""
    if isinstance(data, str):
        data = data.encode()
    return box.request("PUT", PATH + query, data,
                       headers={"Content-Type": content_type, **(headers or {})})


def get(box, selection=None):
    query = f"?selection={selection}" if selection else ""
    return box.request("GET", PATH + query)


def xclip_out(display, selection="clipboard", target=None):
    argv = ["xclip", "-o", "-selection", selection] + (["-t", target] if target else [])
    return display.run(argv, check=False)


class Copier:
    """`xclip -i` in the foreground (-quiet): it owns the selection until
    another program takes it, then exits."""

    def __init__(self, display, data, selection="clipboard", target=None):
        argv = ["xclip", "-quiet", "-i", "-selection", selection] + (["-t", target] if target else [])
        self.proc = subprocess.Popen(argv, env=display.env(), stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.proc.stdin.write(data)
        self.proc.stdin.close()
        # It owns the selection once its own paste reads the value back.
        wait_for(lambda: xclip_out(display, selection, target).stdout == data, timeout=20,
                 what="xclip to own the selection")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def copiers():
    made = []
    yield made
    for copier in made:
        copier.stop()


def png_file(width=40, height=30, seed=7):
    """A real PNG (RGB, varied pixels) made here: bytes that are not text."""
    rows = b"".join(b"\x00" + bytes((x * seed + y * 3) % 256 for x in range(width * 3))
                    for y in range(height))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


# ---- boxd owns the selection ----

def test_text_set_through_boxd_is_pasted_by_xclip(box, display):
    answer = put(box, "hello from boxd")
    assert answer.status == 200, answer.body
    assert answer.json() == {"ok": True, "selection": "clipboard", "kind": "text", "bytes": 15}
    assert xclip_out(display).stdout == b"hello from boxd"
    # And boxd reads its own value back.
    back = get(box)
    assert back.status == 200
    assert back.headers["content-type"] == "text/plain; charset=utf-8"
    assert back.headers["x-clipboard"] == "text"
    assert back.body == b"hello from boxd"


def test_primary_is_its_own_selection(box, display):
    assert put(box, "in primary", selection="primary").status == 200
    assert put(box, "in clipboard").status == 200
    assert display.run(["xclip", "-o"]).stdout == b"in primary"
    assert xclip_out(display).stdout == b"in clipboard"
    assert get(box, "primary").body == b"in primary"


def test_targets_offered_and_latin1_where_it_fits(box, display):
    assert put(box, "caf\u00e9").status == 200
    targets = xclip_out(display, target="TARGETS").stdout.decode().split()
    for name in ("TARGETS", "TIMESTAMP", "UTF8_STRING", "STRING", "TEXT", "text/plain;charset=utf-8"):
        assert name in targets, targets
    assert xclip_out(display, target="STRING").stdout == "caf\u00e9".encode("latin-1")
    assert xclip_out(display, target="text/plain;charset=utf-8").stdout == "caf\u00e9".encode()
    # Text beyond Latin-1: no STRING offered, and none given.
    assert put(box, "\u4e2d\u6587").status == 200
    assert "STRING" not in xclip_out(display, target="TARGETS").stdout.decode().split()
    assert xclip_out(display, target="STRING").stdout == b""


def test_xterm_pastes_primary_with_a_middle_click(box, display, tmp_path):
    out = tmp_path / "pasted"
    term = subprocess.Popen(["xterm", "-geometry", "80x24+0+0", "-T", "pastehere", "-e",
                             "sh", "-c", f"stty -echo; cat > {out}"], env=display.env())
    try:
        wait_for(lambda: display.run(["xdotool", "search", "--name", "pastehere"], check=False).returncode == 0,
                 timeout=20, what="the xterm window")
        time.sleep(0.5)  # the shell inside has started cat
        assert put(box, "pasted by a middle click\n", selection="primary").status == 200
        display.run(["xdotool", "mousemove", "200", "150", "click", "2"])
        wait_for(lambda: out.exists() and out.read_bytes() == b"pasted by a middle click\n",
                 timeout=10, what="xterm to paste primary")
    finally:
        term.kill()
        term.wait()


def test_png_set_through_boxd_is_pasted_byte_exact(box, display):
    image = png_file()
    answer = put(box, image, content_type="image/png")
    assert answer.status == 200 and answer.json()["kind"] == "image"
    assert "image/png" in xclip_out(display, target="TARGETS").stdout.decode().split()
    assert xclip_out(display, target="image/png").stdout == image
    # Told by its signature, whatever the type says.
    assert put(box, image, content_type="application/octet-stream").json()["kind"] == "image"
    back = get(box)
    assert back.headers["content-type"] == "image/png" and back.body == image


def test_unicode_is_whole_both_ways(box, display, copiers):
    text = "emoji \U0001F600\U0001F468\u200d\U0001F469\u200d\U0001F467 CJK \u6f22\u5b57\u304b\u306a " \
           "combining e\u0301 a\u0308\u0323 \u05e9\u05c1 RTL \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \x00nul"
    assert put(box, text).status == 200
    assert xclip_out(display).stdout == text.encode()
    copiers.append(Copier(display, ("copied " + text).encode()))
    assert get(box).body == ("copied " + text).encode()


def test_big_text_goes_by_incr_both_ways(box, display, copiers):
    # 3 MiB: more than one request can carry, so both sides use INCR.
    line = "".join(chr(0x41 + i % 26) for i in range(99)) + "\u00e9\n"
    text = (line * (3 * 1024 * 1024 // len(line.encode()) + 1)).encode()
    assert len(text) > 3 * 1024 * 1024
    assert put(box, text).status == 200
    pasted = xclip_out(display).stdout
    assert len(pasted) == len(text) and pasted == text
    other = text.replace(b"A", b"Z")
    copiers.append(Copier(display, other))
    back = get(box)
    assert back.status == 200 and len(back.body) == len(other) and back.body == other


# ---- another program owns it ----

def test_text_copied_by_xclip_reads_back(box, display, copiers):
    copiers.append(Copier(display, b"copied by xclip"))
    answer = get(box)
    assert answer.status == 200, answer.body
    assert answer.headers["x-clipboard"] == "text"
    assert answer.body == b"copied by xclip"
    copiers.append(Copier(display, b"primary by xclip", selection="primary"))
    assert get(box, "primary").body == b"primary by xclip"


def test_latin1_and_broken_text_from_other_owners(box, display, copiers):
    # An owner offering STRING only: Latin-1, answered as UTF-8.
    copiers.append(Copier(display, b"caf\xe9 cr\xe8me", target="STRING"))
    assert get(box).body == "caf\u00e9 cr\u00e8me".encode()
    # UTF8_STRING that is not UTF-8: the bad bytes become U+FFFD.
    copiers.append(Copier(display, b"bad \xff\xfe end", target="UTF8_STRING"))
    answer = get(box)
    assert answer.headers["content-type"] == "text/plain; charset=utf-8"
    assert answer.body == "bad \ufffd\ufffd end".encode()


def test_png_copied_by_xclip_reads_back_byte_exact(box, display, copiers):
    image = png_file(seed=13)
    copiers.append(Copier(display, image, target="image/png"))
    answer = get(box)
    assert answer.status == 200, answer.body
    assert answer.headers["content-type"] == "image/png"
    assert answer.body == image


def test_boxd_lets_go_when_another_program_copies(box, display, copiers):
    assert put(box, "boxd's value").status == 200
    assert get(box).body == b"boxd's value"
    copiers.append(Copier(display, b"the new owner's value"))
    assert get(box).body == b"the new owner's value"
    # And boxd takes it back.
    assert put(box, "boxd again").status == 200
    assert xclip_out(display).stdout == b"boxd again"
    wait_for(lambda: copiers[0].proc.poll() is not None, what="xclip to see it lost the selection")


def test_an_owner_offering_neither_text_nor_png(box, display, copiers):
    copiers.append(Copier(display, b"GIF89a...", target="image/gif"))
    answer = get(box)
    assert answer.status == 204
    assert answer.headers["x-clipboard"] == "other"
    assert "image/gif" in answer.headers["x-clipboard-targets"].split(",")
    assert answer.body == b""


def test_empty_selection_is_204(box, display):
    answer = get(box, "primary")
    assert answer.status == 204
    assert answer.headers["x-clipboard"] == "empty"
    assert "content-length" not in answer.headers and answer.body == b""


# ---- masking ----

def test_a_secret_comes_back_masked(box, display, copiers):
    secret = "s3cr3t-clipboard-value-0123"
    assert box.call("PUT", "/v1/secrets", {"secrets": {"CLIP_TOKEN": secret}})[0] == 200
    copiers.append(Copier(display, f"token={secret} end".encode()))
    assert get(box).body == b"token=**** end"
    assert put(box, secret).status == 200
    # The program pasting gets the real value; the agent's read is masked.
    assert xclip_out(display).stdout == secret.encode()
    assert get(box).body == b"****"


# ---- hostile input ----

def test_bad_requests(box, display):
    assert_error(box.call("GET", PATH + "?selection=secondary"), 400, "bad_request")
    assert_error(box.call("GET", PATH + "?selection=clip%00board"), 400, "bad_request")
    assert_error(box.call("PUT", PATH + "?selection=", b"x"), 400, "bad_request")
    invalid = put(box, b"caf\xe9 \xff\xfe", content_type="text/plain")
    assert invalid.status == 400 and "UTF-8" in invalid.json()["error"]["message"]
    lying = put(box, b"not a png at all", content_type="image/png")
    assert lying.status == 400 and "PNG" in lying.json()["error"]["message"]
    assert put(box, b"GIF89a", content_type="image/gif").status == 400
    # Nothing of those took the selection.
    assert get(box).status == 204


def test_an_owner_that_never_answers_is_a_timeout(box, display, copiers):
    copier = Copier(display, b"frozen owner")
    copiers.append(copier)
    os.kill(copier.proc.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        assert_error(box.call("GET", PATH), 408, "timeout")
        assert 1.5 < time.monotonic() - started < 10
        # The worker is not stuck: boxd's own value serves at once.
        assert put(box, "boxd answers").status == 200
        assert get(box).body == b"boxd answers"
    finally:
        os.kill(copier.proc.pid, signal.SIGCONT)


def test_a_stalled_paste_does_not_stop_the_others(box, display):
    text = b"q" * (3 * 1024 * 1024)
    assert put(box, text).status == 200
    stalled = subprocess.Popen(["xclip", "-o", "-selection", "clipboard"], env=display.env(),
                               stdout=subprocess.PIPE)
    time.sleep(0.05)
    os.kill(stalled.pid, signal.SIGSTOP)
    try:
        for _ in range(2):
            assert xclip_out(display).stdout == text
        assert put(box, "small").status == 200
        assert xclip_out(display).stdout == b"small"
    finally:
        stalled.kill()
        stalled.wait()


def test_a_value_over_64_mib_is_refused(box, display, copiers):
    copiers.append(Copier(display, b"z" * (65 * 1024 * 1024), target="UTF8_STRING"))
    assert_error(box.call("GET", PATH), 413, "payload_too_large")
    # The abandoned owner may still send pieces: never into the next read.
    copiers.append(Copier(display, b"the next value", selection="primary"))
    for _ in range(3):
        assert get(box, "primary").body == b"the next value"
    assert put(box, "still fine").status == 200


def test_body_over_10_mib_is_413(box, display):
    assert put(box, b"a" * (10 * 1024 * 1024)).status == 200
    assert_error(box.call("PUT", PATH, b"a" * (11 * 1024 * 1024)), 413, "payload_too_large")


def test_put_works_while_locked(box, display):
    assert box.call("PUT", "/v1/lock", {"locked": True})[0] == 200
    try:
        assert put(box, "pasted by the person").status == 200
        assert xclip_out(display).stdout == b"pasted by the person"
    finally:
        box.call("PUT", "/v1/lock", {"locked": False})


def test_x_server_gone_is_503(box, display):
    assert put(box, "before").status == 200
    display.kill()
    assert_error(box.call("GET", PATH), 503, "display_unavailable")
    assert_error(box.call("PUT", PATH, b"after"), 503, "display_unavailable")
    display.start()
    # A new server, a new worker: nothing owned, then boxd's again.
    wait_for(lambda: get(box).status == 204, timeout=20, what="the display back")
    assert put(box, "after").status == 200
    assert xclip_out(display).stdout == b"after"


def test_pastes_and_reads_while_a_recording_takes_the_events(box, display, copiers):
    # A recording's thread drains the X connection then (the main thread
    # does not watch it): selection events must still reach the clipboard.
    status, started = box.call("POST", "/v1/screen/record/start", {"fps": 5})
    assert status == 200, started
    try:
        text = ("r\u00e9cit " * 200000).encode()
        assert put(box, text).status == 200
        for _ in range(3):
            assert xclip_out(display).stdout == text
        copiers.append(Copier(display, b"copied during a recording"))
        assert get(box).body == b"copied during a recording"
        assert put(box, "small").status == 200
        assert xclip_out(display).stdout == b"small"
    finally:
        assert box.call("POST", "/v1/screen/record/stop")[0] == 200


def test_pastes_and_reads_while_a_live_view_takes_the_events(box, display, copiers):
    # A live view's thread wakes on the X connection and drains it too.
    from live_helpers import LiveViewer
    viewer = LiveViewer(box.socket, "?fps=10")
    try:
        wait_for(lambda: viewer.init is not None, timeout=20, what="the live view's init segment")
        text = ("vue \u00e0 " * 300000).encode()
        assert put(box, text).status == 200
        for _ in range(3):
            assert xclip_out(display).stdout == text
        copiers.append(Copier(display, text.replace(b"vue", b"eux")))
        assert get(box).body == text.replace(b"vue", b"eux")
    finally:
        viewer.close()


# ---- the worker's own protocol ----

def test_worker_reports_each_owner_change(display, copiers):
    worker = Worker(WORKER_BIN, display.display)
    try:
        answer, _ = worker.call("clipboard_set", payload=b"mine", selection="primary", kind="text")
        assert answer["ok"] and answer["bytes"] == 4
        worker.wait_event("clipboard", selection="primary", timeout=5)
        copiers.append(Copier(display, b"theirs"))
        worker.wait_event("clipboard", selection="clipboard", timeout=5)
        copiers.append(Copier(display, b"theirs too", selection="primary"))
        worker.wait_event("clipboard", selection="primary", timeout=5)
        # Its owner ending is a change too (the selection is empty now).
        copiers.pop().stop()
        worker.wait_event("clipboard", selection="primary", timeout=5)
        answer, payload = worker.call("clipboard_get", selection="primary")
        assert answer["kind"] == "empty" and payload == b""
        answer, _ = worker.call("clipboard_set", payload=b"x", selection="secondary", kind="text")
        assert answer["error"]["code"] == "bad_request"
        answer, _ = worker.call("clipboard_set", payload=b"x", kind="jpeg")
        assert answer["error"]["code"] == "bad_request"
    finally:
        worker.close()


def test_worker_held_does_not_retire(display):
    worker = Worker(WORKER_BIN, display.display, ["--idle-exit", "1"])
    try:
        assert worker.call("hold", hold=True)[0]["held"] is True
        with pytest.raises(TimeoutError):
            worker.wait_event("idle", timeout=2.5)
        assert worker.call("hold", hold=False)[0]["held"] is False
        worker.wait_event("idle", timeout=5)
    finally:
        worker.close()


# ---- the worker's life ----

def test_worker_kept_while_boxd_owns_the_selection(boxd_factory, display):
    box = boxd_factory("--screen-idle", "1", env={"BOXD_TEST_DISPLAY": display.display})
    assert put(box, "still here after the idle time").status == 200
    worker = worker_pid(box)
    time.sleep(3)
    assert worker_pid(box) == worker
    assert xclip_out(display).stdout == b"still here after the idle time"
    # Once another program owns it, the worker retires as usual.
    copier = Copier(display, b"mine now")
    try:
        wait_for(lambda: worker_pid(box) is None, timeout=10, what="the idle worker to retire")
    finally:
        copier.stop()


def test_the_lock_holds_the_worker(boxd_factory, display):
    box = boxd_factory("--screen-idle", "1", env={"BOXD_TEST_DISPLAY": display.display})
    wait_for(lambda: worker_pid(box) is None, timeout=10, what="the idle worker to retire")
    assert box.call("PUT", "/v1/lock", {"locked": True})[0] == 200
    try:
        worker = wait_for(lambda: worker_pid(box), timeout=10, what="the held worker to start")
        time.sleep(3)
        assert worker_pid(box) == worker
    finally:
        box.call("PUT", "/v1/lock", {"locked": False})
    wait_for(lambda: worker_pid(box) is None, timeout=10, what="the released worker to retire")


# ---- boxctl ----

def test_boxctl_clipboard(box, display, tmp_path):
    out = box.boxctl("clipboard")
    assert out.returncode == 0 and out.stdout == b"" and b"empty" in out.stderr
    out = box.boxctl("clipboard", "set", "from boxctl \u00e9")
    assert out.returncode == 0, out.stderr
    assert xclip_out(display).stdout == "from boxctl \u00e9".encode()
    assert box.boxctl("clipboard").stdout == "from boxctl \u00e9".encode()
    assert box.boxctl("clipboard", "get").stdout == "from boxctl \u00e9".encode()
    assert box.boxctl("clipboard", "set", "--primary", "-", input=b"from stdin\n").returncode == 0
    assert display.run(["xclip", "-o"]).stdout == b"from stdin\n"
    assert box.boxctl("clipboard", "get", "--primary").stdout == b"from stdin\n"
    # A PNG by its signature, and back to a file.
    image = png_file(seed=3)
    (tmp_path / "in.png").write_bytes(image)
    assert box.boxctl("clipboard", "set", "--file", str(tmp_path / "in.png")).returncode == 0
    assert xclip_out(display, target="image/png").stdout == image
    assert box.boxctl("clipboard", "-o", str(tmp_path / "out.png")).returncode == 0
    assert (tmp_path / "out.png").read_bytes() == image
    # Into a pipe it goes; to a terminal it does not.
    assert box.boxctl("clipboard").stdout == image
    primary, secondary = os.openpty()
    try:
        proc = subprocess.run([box_ctl_binary(), "clipboard"], stdout=secondary, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, env=dict(os.environ, BOXD_SOCKET=box.socket),
                              timeout=30)
    finally:
        os.close(secondary)
        os.close(primary)
    assert proc.returncode == 1 and b"-o FILE" in proc.stderr
    # Refusals.
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9")
    out = box.boxctl("clipboard", "set", "--file", str(tmp_path / "latin1.txt"))
    assert out.returncode == 1 and b"UTF-8" in out.stderr
    assert box.boxctl("clipboard", "set").returncode == 2
    assert box.boxctl("clipboard", "paste").returncode == 2
    assert box.boxctl("clipboard", "set", "a", "b").returncode == 2


def box_ctl_binary():
    from screen_helpers import BOXCTL_BIN
    return BOXCTL_BIN
