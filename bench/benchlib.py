"""Shared pieces of the benchmarks: a boxd of their own, a row printer."""
import http.client
import os
import shutil
import socket
import subprocess
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_DIR = os.environ.get("BOXD_BUILD_DIR", os.path.join(REPO, "build"))
BOXD = os.path.join(BUILD_DIR, "boxd", "boxd")
BOXCTL = os.path.join(BUILD_DIR, "boxd", "ctl", "boxctl")


class UnixHTTP(http.client.HTTPConnection):
    """HTTP to boxd over its unix socket."""

    def __init__(self, path, timeout=600):
        super().__init__("boxd", timeout=timeout)
        self.socket_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.socket_path)


def row(name, boxd, baseline, ratio):
    print(f"{name:<44} | {boxd:>14} | {baseline:>14} | {ratio}", flush=True)


def burners():
    """A busy loop on every core (no forks of its own), at normal priority:
    a loaded box. Kill and wait for each when done."""
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(os.cpu_count())]


def status_kib(pid, field="VmRSS"):
    """A KiB field of /proc/PID/status (VmRSS, VmHWM, ...); 0 when the
    process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


class BenchBoxd:
    """boxd on temporary dirs; a context manager."""

    def __init__(self, *args, prefix=()):
        """`prefix`: a program boxd is started through (nsenter, say)."""
        self.root = tempfile.mkdtemp(prefix="boxd-bench-")
        self.socket = os.path.join(self.root, "run", "boxd.sock")
        self.args = [*prefix, BOXD, "--work-dir", os.path.join(self.root, "work"),
                     "--run-dir", os.path.join(self.root, "run"), "--vsock-port", "off", *args]

    def __enter__(self):
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(self.args, stderr=subprocess.DEVNULL)
        while True:
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(self.socket)
                s.close()
                break
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("boxd exited at start")
                time.sleep(0.0005)
        return self

    def rss_kib(self):
        return status_kib(self.proc.pid)

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


class WebSocketClient:
    """The least of an RFC 6455 client over boxd's unix socket, for
    timing: masked frames out, whole unfragmented frames in."""

    GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    def __init__(self, socket_path, path):
        import base64
        import hashlib
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(socket_path)
        key = base64.b64encode(os.urandom(16))
        self.sock.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: boxd\r\n"
                          b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                          b"Sec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.data = b""
        while b"\r\n\r\n" not in self.data:
            self._more()
        head, self.data = self.data.split(b"\r\n\r\n", 1)
        accept = base64.b64encode(hashlib.sha1(key + self.GUID).digest())
        if not head.startswith(b"HTTP/1.1 101") or accept not in head:
            raise RuntimeError(f"attach refused: {head[:200]!r}")

    def _more(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("boxd closed the session")
        self.data += chunk

    def send(self, opcode, payload):
        import struct
        key = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        head += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack("!H", n)
        self.sock.sendall(head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload)))

    def recv(self):
        """(opcode, payload) of the next frame."""
        import struct
        while len(self.data) < 2:
            self._more()
        n, at = self.data[1] & 0x7F, 2
        if n >= 126:
            size = 2 if n == 126 else 8
            while len(self.data) < 2 + size:
                self._more()
            n = struct.unpack("!H" if size == 2 else "!Q", self.data[2:2 + size])[0]
            at += size
        while len(self.data) < at + n:
            self._more()
        opcode, payload = self.data[0] & 0xF, self.data[at:at + n]
        self.data = self.data[at + n:]
        return opcode, payload

    def close(self):
        self.sock.close()
