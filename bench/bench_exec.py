#!/usr/bin/python3
"""Exec benchmarks, side by side with what a user would do without boxd.

Rows: name | boxd | baseline | ratio
  spawn p50          POST /v1/exec `true` (JSON)  vs  spawning `bash -c true`
  1 GiB throughput   foreground `head -c 1G /dev/zero`  vs  the same into a file
  peak RSS           boxd + shim during the 1 GiB run (limit 32 MiB)
  RSS per shim       with 500 background `sleep` jobs at once (limit 1 MiB)
Each part stays well under 30 s on a shared 2-core machine."""
import glob
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BOXD_BUILD_DIR", os.path.join(REPO, "build"))
BOXD = os.path.join(BUILD, "boxd", "boxd")


class Unix(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("boxd", timeout=600)
        self.path_ = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path_)


def call(conn, method, path, obj=None):
    conn.request(method, path, body=json.dumps(obj) if obj is not None else None,
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, json.loads(response.read() or b"null")


def rss_kib(pid, field="VmRSS"):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def shim_pids(run_dir):
    pids = []
    for meta in glob.glob(os.path.join(run_dir, "procs", "*", "meta")):
        data = open(meta, "rb").read()
        at = data.find(b"shimPid ")
        if at >= 0:
            line_end = data.index(b"\n", at)
            value_end = data.index(b"\n", line_end + 1)
            pids.append(int(data[line_end + 1:value_end]))
    return pids


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import row  # noqa: E402


def bench_spawn(conn, work):
    for _ in range(20):  # warm up both paths
        call(conn, "POST", "/v1/exec", {"cmd": "true"})
        subprocess.run(["bash", "-c", "true"])
    api, direct = [], []
    for _ in range(200):
        t = time.perf_counter()
        status, _ = call(conn, "POST", "/v1/exec", {"cmd": "true"})
        api.append(time.perf_counter() - t)
        t = time.perf_counter()
        subprocess.run(["bash", "-c", "true"])
        direct.append(time.perf_counter() - t)
    a, d = statistics.median(api) * 1000, statistics.median(direct) * 1000
    row("exec `true` p50 (API vs bash -c true)", f"{a:.2f} ms", f"{d:.2f} ms", f"{a / d:.2f}x (goal <= 1.5x)")


def bench_throughput(conn, boxd_pid, run_dir, work):
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            total = rss_kib(boxd_pid) + sum(rss_kib(p) for p in shim_pids(run_dir)
                                            if os.path.exists(f"/proc/{p}"))
            peak[0] = max(peak[0], total)
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    t = time.perf_counter()
    status, body = call(conn, "POST", "/v1/exec", {"cmd": "head -c 1G /dev/zero"})
    api = time.perf_counter() - t
    done.set()
    sampler.join()
    assert status == 200 and body["exitCode"] == 0, body
    target = os.path.join(work, "baseline.bin")
    t = time.perf_counter()
    subprocess.run(["bash", "-c", f"head -c 1G /dev/zero > {target}"], check=True)
    direct = time.perf_counter() - t
    os.unlink(target)
    os.unlink(body["logPath"])
    a, d = 1024 / api, 1024 / direct
    row("exec 1 GiB out (vs head > file)", f"{a:.0f} MiB/s", f"{d:.0f} MiB/s", f"{a / d:.0%} (goal >= 70%)")
    row("peak RSS boxd+shim during 1 GiB", f"{peak[0] / 1024:.1f} MiB", "32 MiB limit",
        f"{peak[0] / 1024 / 32:.0%} of limit")


def bench_many(conn, run_dir):
    ids = []
    t = time.perf_counter()
    for _ in range(500):
        status, body = call(conn, "POST", "/v1/exec", {"cmd": "sleep 120", "background": True})
        assert status == 200, body
        ids.append(body["bgId"])
    started = time.perf_counter() - t
    status, health = call(conn, "GET", "/v1/health")
    pids = [p for p in shim_pids(run_dir) if os.path.exists(f"/proc/{p}")]
    rss = statistics.mean(rss_kib(p) for p in pids)
    pss = statistics.mean(pss_kib(p) for p in pids)
    row("500 background jobs at once", f"{health['procs']['running']} running",
        f"{started:.1f} s to start", "")
    row("RSS per shim (PSS) with 500 jobs", f"{rss / 1024:.2f} MiB", f"({pss / 1024:.2f} MiB)",
        f"{rss / 1024:.0%} of the 1 MiB goal")
    for bg_id in ids:
        call(conn, "POST", f"/v1/procs/{bg_id}/stop", {"signal": "SIGKILL"})


def main():
    root = tempfile.mkdtemp(prefix="bench-exec-")
    work, run = os.path.join(root, "work"), os.path.join(root, "run")
    sock = os.path.join(run, "boxd.sock")
    proc = subprocess.Popen([BOXD, "--work-dir", work, "--run-dir", run, "--socket", sock,
                             "--vsock-port", "off"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.02)
        conn = Unix(sock)
        parts = sys.argv[1:] or ["spawn", "throughput", "many"]
        if "spawn" in parts:
            bench_spawn(conn, work)
        if "throughput" in parts:
            bench_throughput(conn, proc.pid, run, work)
        if "many" in parts:
            bench_many(conn, run)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
