"""Helpers for the screen tests: an Xvfb on a free display, and a client that
drives boxd-screen directly over its socketpair protocol (docs/screen.md)."""
import json
import os
import socket
import struct
import subprocess
import time

import pytest

HEADER = struct.Struct("=II")


def free_display(start=60):
    """A display number with no X socket or lock file, so tests never collide."""
    for number in range(start, start + 200):
        if not os.path.exists(f"/tmp/.X11-unix/X{number}") and not os.path.exists(f"/tmp/.X{number}-lock"):
            return number
    raise RuntimeError("no free X display number")


class Xvfb:
    """A real Xvfb for one test; `restart()` brings it back on the same display."""

    def __init__(self, width=1280, height=800, number=None):
        self.number = number if number is not None else free_display(60 + os.getpid() % 100)
        self.display = f":{self.number}"
        self.size = (width, height)
        self.proc = None
        self.start()

    def start(self):
        w, h = self.size
        self.proc = subprocess.Popen(
            ["Xvfb", self.display, "-screen", "0", f"{w}x{h}x24", "-nolisten", "tcp", "-noreset"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.run(["xdpyinfo"], check=False).returncode == 0:
                return
            if self.proc.poll() is not None:
                raise RuntimeError("Xvfb exited at start")
            time.sleep(0.05)
        raise RuntimeError("Xvfb did not come up")

    def env(self):
        return dict(os.environ, DISPLAY=self.display)

    def run(self, argv, check=True, **kwargs):
        return subprocess.run(argv, env=self.env(), check=check, capture_output=True, **kwargs)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        # A killed server leaves its socket and lock behind; a new one cleans them.

    def restart(self):
        self.kill()
        self.start()

    def client_count(self):
        """Connections the server holds open (its socket fds), for leak checks."""
        fds = os.listdir(f"/proc/{self.proc.pid}/fd")
        count = 0
        for fd in fds:
            try:
                if os.readlink(f"/proc/{self.proc.pid}/fd/{fd}").startswith("socket:"):
                    count += 1
            except OSError:
                pass
        return count

    def pointer(self):
        out = self.run(["xdotool", "getmouselocation", "--shell"]).stdout.decode()
        values = dict(line.split("=", 1) for line in out.split())
        return int(values["X"]), int(values["Y"])


class Worker:
    """boxd-screen driven over its socketpair, as boxd does."""

    def __init__(self, binary, display, extra=()):
        self.sock, theirs = socket.socketpair()
        self.proc = subprocess.Popen(
            [binary, "--display", display, "--fd", str(theirs.fileno()), *extra],
            pass_fds=[theirs.fileno()], stderr=subprocess.PIPE)
        theirs.close()
        self.next_id = 1
        self.events = []

    def _read_exact(self, n):
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise EOFError("worker closed its end")
            data += chunk
        return bytes(data)

    def read_frame(self, timeout=30):
        self.sock.settimeout(timeout)
        json_length, payload_length = HEADER.unpack(self._read_exact(HEADER.size))
        message = json.loads(self._read_exact(json_length))
        payload = self._read_exact(payload_length) if payload_length else b""
        return message, payload

    def send(self, op, payload=b"", **fields):
        request_id = self.next_id
        self.next_id += 1
        text = json.dumps(dict(fields, id=request_id, op=op)).encode()
        self.sock.sendall(HEADER.pack(len(text), len(payload)) + text + payload)
        return request_id

    def call(self, op, timeout=60, payload=b"", **fields):
        request_id = self.send(op, payload, **fields)
        while True:
            message, payload = self.read_frame(timeout)
            if "event" in message:
                self.events.append(message)
                continue
            assert message["id"] == request_id, message
            return message, payload

    def wait_event(self, name, timeout=30, **match):
        for i, event in enumerate(self.events):
            if event["event"] == name and all(event.get(k) == v for k, v in match.items()):
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message, _ = self.read_frame(max(0.1, deadline - time.monotonic()))
            if message.get("event") == name and all(message.get(k) == v for k, v in match.items()):
                return message
            self.events.append(message)
        raise TimeoutError(f"no {name} event")

    def close(self):
        self.sock.close()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.returncode


BUILD_DIR = os.environ.get("BOXD_BUILD_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
BOXD_BIN = os.path.join(BUILD_DIR, "boxd", "boxd")
BOXCTL_BIN = os.path.join(BUILD_DIR, "boxd", "ctl", "boxctl")
WORKER_BIN = os.path.join(BUILD_DIR, "boxd", "screen", "boxd-screen")
PATTERN_BIN = os.path.join(BUILD_DIR, "tests", "screen-pattern")


class Display:
    """What the screen tests need of an X server: the foundation's `xvfb`
    fixture (or Xvfb here) plus running clients on it and reading it back."""

    def __init__(self, server):
        self.server = server
        self.display = server.display

    @property
    def proc(self):
        return self.server.proc

    def env(self):
        return dict(os.environ, DISPLAY=self.display)

    def run(self, argv, check=True, **kwargs):
        return subprocess.run(argv, env=self.env(), check=check, capture_output=True, timeout=30, **kwargs)

    def wait_ready(self):
        deadline = time.monotonic() + 15
        while self.run(["xdpyinfo"], check=False).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the X server {self.display} does not answer")
            time.sleep(0.05)
        return self

    def kill(self):
        self.server.kill()

    def start(self):
        self.server.start()
        return self.wait_ready()

    def client_count(self):
        return Xvfb.client_count(self.server)

    def pointer(self):
        out = self.run(["xdotool", "getmouselocation", "--shell"]).stdout.decode()
        values = dict(line.split("=", 1) for line in out.split())
        return int(values["X"]), int(values["Y"])


def children_named(parent, name):
    """The pids of `parent`'s live children called `name` (their comm; no
    zombie)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if int(fields[1]) == parent and comm == name and fields[0] != "Z":
            found.append(int(pid))
    return found


def worker_pid(boxd):
    """boxd's screen worker (its child named boxd-screen), or None."""
    found = children_named(boxd.proc.pid, "boxd-screen")
    return found[0] if found else None


def decode_rgb(image_bytes):
    """(width, height, rgb bytes) of a PNG or JPEG, decoded by ffmpeg."""
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width,height", "-of", "json", "-"],
                           input=image_bytes, capture_output=True, check=True)
    stream = json.loads(probe.stdout)["streams"][0]
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", "-", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                         input=image_bytes, capture_output=True, check=True).stdout
    return stream["width"], stream["height"], raw


def pixel(decoded, x, y):
    width, _, raw = decoded
    at = (y * width + x) * 3
    return tuple(raw[at:at + 3])


def probe_video(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-show_entries",
                          "stream=codec_name,width,height,pix_fmt,nb_read_frames:format=duration",
                          "-of", "json", path], capture_output=True, text=True)
    if out.returncode != 0:
        return None
    data = json.loads(out.stdout)
    if not data.get("streams"):
        return None
    stream = data["streams"][0]
    stream["duration"] = float(data.get("format", {}).get("duration", 0) or 0)
    stream["nb_read_frames"] = int(stream.get("nb_read_frames", 0) or 0)
    return stream


# The fixtures of the screen tests (each test module imports them): an Xvfb
# that answers (Display.wait_ready), and a boxd on it.
@pytest.fixture
def display(xvfb):
    return Display(xvfb).wait_ready()


@pytest.fixture
def box(boxd_factory, display):
    return boxd_factory(env={"BOXD_TEST_DISPLAY": display.display})
