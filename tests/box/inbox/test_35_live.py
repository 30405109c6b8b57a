"""The live screen as a person uses it: Chromium on :99 (started by
test_30_display, or here if it is not there) showing a page, the live
stream (GET /v1/screen/live) showing it, and a click sent through the
takeover path (the lock's token in X-Takeover) changing it."""
import json
import os
import socket
import subprocess
import threading
import time

from boxtest import SOCKET, api, emit, figure, request, sh, wait_until

PAGE = """<!doctype html><html><body style="margin:0;background:#fff">
<div id="panel" style="position:absolute;left:100px;top:100px;width:300px;height:200px;background:#f00"></div>
<script>
document.getElementById('panel').addEventListener('click', function (e) {
  e.target.style.background = '#0f0';
});
</script></body></html>
"""
CLICK = (150, 130)   # inside the panel, away from where the colour is read
SPOT = (330, 260)    # inside the panel, away from the pointer
STREAM = "/work/boxtest-live.mp4"


def colour_name(rgb):
    r, g, b = rgb
    if r > 200 and g < 60 and b < 60:
        return "red"
    if g > 200 and r < 60 and b < 60:
        return "green"
    return "other"


def screen_colour():
    """The panel's colour from a screenshot (a read: allowed while locked):
    'red', 'green' or 'other' when the 10x10 patch is not all one of them."""
    import test_30_display
    names = {colour_name(p) for row in test_30_display.shot(*SPOT, 10, 10) for p in row}
    return names.pop() if len(names) == 1 else "other"


class LiveReader:
    """GET /v1/screen/live on boxd's socket, the body written to STREAM as it
    comes (dechunked); arrival times of the bytes kept."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(SOCKET)
        self.sock.sendall(b"GET /v1/screen/live HTTP/1.1\r\nHost: box\r\n\r\n")
        self.sock.settimeout(0.5)
        self.headers = {}
        self.status = None
        self.bytes = 0
        self.stop = False
        self.out = open(STREAM, "wb")
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def recv(self):
        while not self.stop:
            try:
                return self.sock.recv(65536)
            except socket.timeout:
                continue
        return b""

    def fill(self, buffer, enough):
        """Reads onto `buffer` until enough(buffer); None at the end first."""
        while not enough(buffer):
            chunk = self.recv()
            if not chunk:
                return None
            buffer += chunk
        return buffer

    def run(self):
        buffer = self.fill(b"", lambda b: b"\r\n\r\n" in b)
        if buffer is None:
            return
        head, buffer = buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip() for k, v in
                        (line.split(":", 1) for line in lines[1:] if ":" in line)}
        while True:
            buffer = self.fill(buffer, lambda b: b"\r\n" in b)
            if buffer is None:
                return
            size_line, buffer = buffer.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                return
            buffer = self.fill(buffer, lambda b: len(b) >= size + 2)
            if buffer is None:
                return
            self.out.write(buffer[:size])
            self.out.flush()
            self.bytes += size
            buffer = buffer[size + 2:]

    def close(self):
        self.stop = True
        self.thread.join(timeout=5)
        self.sock.close()
        self.out.close()


def decoded_spot(path):
    """(pts ms, colour name) of every decoded frame of the stream at SPOT."""
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "frame=best_effort_timestamp_time",
                            "-of", "json", path], capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr[-300:]
    times = [float(f["best_effort_timestamp_time"]) * 1000 for f in json.loads(probe.stdout)["frames"]]
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-vf", f"crop=2:2:{SPOT[0]}:{SPOT[1]}",
                          "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                         capture_output=True, timeout=120).stdout
    colours = [colour_name(tuple(raw[i:i + 3])) for i in range(0, len(raw), 12)]
    assert len(colours) == len(times), (len(colours), len(times))
    return list(zip(times, colours))


def show_page():
    """The panel page in Chromium: test_30's server and browser reload it;
    without them, both are started here."""
    import test_30_display
    os.makedirs("/work/page", exist_ok=True)
    with open("/work/page/index.html", "w") as f:
        f.write(PAGE)
    served = "panel" in sh("python3 -c 'import urllib.request as u;"
                           "print(u.urlopen(\"http://127.0.0.1:8765/\").read())' 2>&1").stdout
    if not served:
        api("POST", "/v1/exec", {"cmd": "exec python3 -m http.server 8765 --bind 127.0.0.1",
                                 "cwd": "/work/page", "background": True})
        wait_until("the page served", lambda: "panel" in sh(
            "python3 -c 'import urllib.request as u;print(u.urlopen(\"http://127.0.0.1:8765/\").read())' 2>&1"
        ).stdout, 30)
    if sh("pgrep -x chromium || pgrep -f 'chromium.*8765'").returncode == 0:
        api("POST", "/v1/screen/input", {"actions": [{"type": "key", "keys": "F5"}]})
        try:
            wait_until("the red panel after a reload", lambda: screen_colour() == "red", 30, 1)
            return
        except AssertionError:
            pass
    api("POST", "/v1/exec", {"cmd": test_30_display.CHROMIUM, "background": True})
    wait_until("the red panel in a new Chromium", lambda: screen_colour() == "red", 120, 1)


def check_live_stream_shows_the_page_and_a_takeover_click_changes_it():
    show_page()
    reader = LiveReader()
    token = None
    try:
        wait_until("the live stream's first bytes", lambda: reader.bytes > 0, 20, 0.2)
        assert reader.status == 200 and reader.headers["content-type"].startswith("video/mp4"), reader.headers
        started_at = int(reader.headers["x-started-at"])
        time.sleep(1)
        lock = api("PUT", "/v1/lock", {"locked": True, "note": "boxtest: a person takes over"})
        token = lock["token"]
        click = {"actions": [{"type": "move", "x": CLICK[0], "y": CLICK[1]}, {"type": "click"}]}
        status, _, body = request("POST", "/v1/screen/input", click)
        assert status == 423, (status, body[:200])
        status, _, body = request("POST", "/v1/screen/input", click, headers={"X-Takeover": token})
        clicked_at = time.time() * 1000
        assert status == 200, (status, body[:200])
        wait_until("the panel turned green on screen", lambda: screen_colour() == "green", 30, 0.5)
        time.sleep(1)
    finally:
        reader.close()
        if token:
            api("PUT", "/v1/lock", {"locked": False})
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,width,height",
                            "-of", "csv=p=0", STREAM], capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == "h264,1280,800", (probe.stdout, probe.stderr[-300:])
    frames = decoded_spot(STREAM)
    names = [name for _, name in frames]
    assert names[0] == "red", f"the stream's first frame shows {names[0]}, not the page's red panel"
    assert names[-1] == "green", f"the stream's last frame shows {names[-1]} after the click"
    first_green = min(pts for pts, name in frames if name == "green")
    # By the stream's own clock: when the green panel was grabbed, after the click's answer.
    shown_after = started_at + first_green - clicked_at
    figure("live-click-to-frame-ms", f"{shown_after:.0f}")
    emit(f"live stream: {reader.bytes} bytes, {len(frames)} frames")
    return (f"{len(frames)} frames, {reader.bytes // 1024} KiB; red page, then green "
            f"{shown_after:.0f} ms after the takeover click's answer")
