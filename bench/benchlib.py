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
