"""Helpers for the live screen (GET /v1/screen/live): a viewer that reads the
chunked fMP4 stream on a thread and notes when each fragment arrived, a
small MP4 box reader, and decoding with ffmpeg. Used by
test_screen_live.py and bench/bench_live.py."""
import json
import os
import socket
import struct
import subprocess
import threading
import time


def boxes(data, start=0, end=None):
    """(type, start, body_start, end) of each whole box in data[start:end]."""
    end = len(data) if end is None else end
    at = start
    while at + 8 <= end:
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        header = 8
        if size == 1:
            if at + 16 > end:
                return
            size = struct.unpack(">Q", data[at + 8:at + 16])[0]
            header = 16
        if size < 8 or at + size > end:
            return
        yield kind.decode("latin-1"), at, at + header, at + size
        at += size


def child(data, parent_body, parent_end, path):
    """The body range of the box at `path` ("trak/mdia/mdhd") inside a box."""
    start, end = parent_body, parent_end
    for name in path.split("/"):
        for kind, _, body, stop in boxes(data, start, end):
            if kind == name:
                start, end = body, stop
                break
        else:
            return None
    return start, end


def timescale(init):
    for kind, _, body, stop in boxes(init):
        if kind == "moov":
            found = child(init, body, stop, "trak/mdia/mdhd")
            if found:
                version = init[found[0]]
                offset = found[0] + (20 if version == 1 else 12)
                return struct.unpack(">I", init[offset:offset + 4])[0]
    return None


def fragment_info(data, body, stop):
    """(decode time in the track's units, is a keyframe) of one moof."""
    traf = child(data, body, stop, "traf")
    tfdt = child(data, traf[0], traf[1], "tfdt")
    version = data[tfdt[0]]
    decode = struct.unpack(">Q" if version == 1 else ">I",
                           data[tfdt[0] + 4:tfdt[0] + (12 if version == 1 else 8)])[0]
    tfhd = child(data, traf[0], traf[1], "tfhd")
    flags = int.from_bytes(data[tfhd[0] + 1:tfhd[0] + 4], "big")
    at = tfhd[0] + 8
    default_flags = None
    for bit, size in ((0x1, 8), (0x2, 4), (0x8, 4), (0x10, 4)):
        if flags & bit:
            at += size
    if flags & 0x20:
        default_flags = int.from_bytes(data[at:at + 4], "big")
    trun = child(data, traf[0], traf[1], "trun")
    trun_flags = int.from_bytes(data[trun[0] + 1:trun[0] + 4], "big")
    at = trun[0] + 8 + (4 if trun_flags & 0x1 else 0)
    sample_flags = default_flags
    if trun_flags & 0x4:
        sample_flags = int.from_bytes(data[at:at + 4], "big")
    key = sample_flags is not None and not (sample_flags & 0x10000)
    return decode, key


class LiveViewer:
    """GET /v1/screen/live on boxd's unix socket, read on a thread.
    `fragments` lists, per moof+mdat, (arrival time.time(), pts in ms, key,
    size); `data` is the whole body so far. With read=False the viewer
    connects and then reads nothing (a stalled client)."""

    def __init__(self, socket_path, query="", read=True, receive_buffer=None, file_path=None):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if receive_buffer:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.sock.connect(socket_path)
        self.sock.sendall(f"GET /v1/screen/live{query} HTTP/1.1\r\nHost: boxd\r\n\r\n".encode())
        self.status = None
        self.headers = {}
        self.data = bytearray()
        self.error_body = b""
        self.fragments = []
        self.init = None
        self.scale = None
        self.ended = False  # the chunked body ended (0-length chunk) or the socket closed
        self.file = open(file_path, "wb") if file_path else None
        self._parsed = 0
        self._lock = threading.Lock()
        self._stop = False
        self.thread = None
        if read:
            self.start_reading()

    def start_reading(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _recv(self, buffer):
        while True:
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                if self._stop:
                    return None
                continue
            except OSError:
                return None
            return chunk

    def _fill(self, buffer, enough):
        """Reads onto `buffer` until enough(buffer); None (and `ended`)
        when the stream ends first."""
        while not enough(buffer):
            chunk = self._recv(buffer)
            if not chunk:
                self.ended = True
                return None
            buffer += chunk
        return buffer

    def _run(self):
        self.sock.settimeout(0.2)
        buffer = self._fill(b"", lambda b: b"\r\n\r\n" in b)
        if buffer is None:
            return
        head, buffer = buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip() for k, v in
                        (line.split(":", 1) for line in lines[1:] if ":" in line)}
        chunked = "chunked" in self.headers.get("transfer-encoding", "")
        while True:
            if chunked:
                buffer = self._fill(buffer, lambda b: b"\r\n" in b)
                if buffer is None:
                    return
                size_line, buffer = buffer.split(b"\r\n", 1)
                size = int(size_line.split(b";")[0], 16)
                buffer = self._fill(buffer, lambda b: len(b) >= size + 2)
                if buffer is None:
                    return
                body, buffer = buffer[:size], buffer[size + 2:]
                if size == 0:
                    self.ended = True
                    return
            else:
                body = buffer or self._recv(buffer)
                buffer = b""
                if not body:
                    self.ended = True
                    return
            self._add(body, time.time())

    def _add(self, body, arrived):
        with self._lock:
            if self.status != 200:
                self.error_body += body
                return
            self.data += body
            if self.file:
                self.file.write(body)
                self.file.flush()
            pending_moof = None
            for kind, start, body_start, stop in boxes(self.data, self._parsed):
                if kind == "moov":
                    self.init = bytes(self.data[:stop])
                    self.scale = timescale(self.init)
                elif kind == "moof":
                    pending_moof = (body_start, stop)
                    continue
                elif kind == "mdat" and pending_moof:
                    decode, key = fragment_info(self.data, *pending_moof)
                    self.fragments.append((arrived, decode * 1000.0 / self.scale, key,
                                           stop - pending_moof[0] + 8))
                    pending_moof = None
                self._parsed = stop

    def bytes_after(self, when):
        with self._lock:
            return sum(f[3] for f in self.fragments if f[0] > when)

    def wait_fragments(self, count, timeout=10):
        deadline = time.monotonic() + timeout
        while len(self.fragments) < count:
            if time.monotonic() > deadline or self.ended:
                raise AssertionError(f"{len(self.fragments)} fragments, not {count}; status {self.status}")
            time.sleep(0.01)

    def started_at(self):
        return int(self.headers["x-started-at"])

    def snapshot(self, path):
        """Writes the stream so far (whole fragments only) to `path`."""
        with self._lock:
            data = bytes(self.data[:self._parsed])
        with open(path, "wb") as f:
            f.write(data)
        return path

    def close(self):
        self._stop = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        if self.thread:
            self.thread.join(timeout=5)
        if self.file:
            self.file.close()


def decoded_colours(path, x, y):
    """(pts in ms, (r, g, b)) of every decoded frame at pixel (x, y)."""
    frames = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "frame=best_effort_timestamp_time",
         "-of", "json", path], capture_output=True, text=True, check=True)
    times = [float(f["best_effort_timestamp_time"]) * 1000 for f in json.loads(frames.stdout)["frames"]]
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", path, "-vf", f"crop=2:2:{x}:{y}", "-fps_mode", "passthrough",
         "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], capture_output=True, check=True).stdout
    colours = [tuple(raw[i:i + 3]) for i in range(0, len(raw), 12)]
    assert len(colours) == len(times), (len(colours), len(times))
    return list(zip(times, colours))


def decode_errors(path):
    """What ffmpeg says decoding the whole file ("" when clean). Timestamps
    are passed through: the stream's frames are not on a constant grid."""
    out = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-fps_mode", "passthrough", "-f", "null", "-"],
                         capture_output=True, text=True)
    # The null muxer's own complaint when two frames fall in one tick of the
    # time base ffmpeg picked for its output: nothing about the stream.
    said = [line for line in out.stderr.splitlines()
            if line.strip() and "non monotonically increasing dts to muxer" not in line]
    return "\n".join(said) if out.returncode == 0 else f"exit {out.returncode}: {out.stderr}"


def near(colour, target, tolerance=40):
    return all(abs(a - b) <= tolerance for a, b in zip(colour, target))


class Filler:
    """tests/screen-pattern --fill: fills the screen with a colour on demand
    and says when the X server has drawn it (ms since the epoch)."""

    def __init__(self, binary, env):
        self.proc = subprocess.Popen([binary, "--fill"], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        assert self.proc.stdout.readline() == "ready\n"

    def fill(self, rgb):
        self.proc.stdin.write("%02x%02x%02x\n" % rgb)
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().split()
        assert line[0] == "filled", line
        return int(line[1])

    def close(self):
        self.proc.kill()
        self.proc.wait()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def thread_count(pid):
    return len(os.listdir(f"/proc/{pid}/task"))
