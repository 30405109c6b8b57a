#!/usr/bin/python3
"""Exec benchmarks, side by side with what a user would do without boxd.

Rows: name | boxd | baseline | ratio
  spawn p50/p99      POST /v1/exec `true` (JSON)  vs  spawning `bash -c true`,
                     alternating on a quiet machine
  back to back       500 of each in a row: wall and the whole machine's CPU
                     per call (the spare made for the next command included),
                     and boxd's own CPU
  loaded p50/p99     the same while a busy loop runs on every core
  parallel p50/p99   4 client processes at once, each alternating the two
  1 MiB output p50   a command printing 1 MiB, all of it returned
                     (maxOutputBytes 2 MiB)  vs  `bash -c` with its output read
  1 GiB throughput   foreground `head -c 1G /dev/zero`  vs  the same into a file
  peak RSS           boxd + shim during the 1 GiB run (limit 32 MiB)
  RSS per shim       with 500 background `sleep` jobs at once (limit 1 MiB)
Each part stays well under 30 s on a shared 2-core machine.

    bench/bench_exec.py [spawn] [cpu] [loaded] [parallel] [output] [throughput] [many]

The exec rows are what issue 17 measures: `true` at most 1.5x `bash -c true`
quiet, at most 2x under load. The machine is shared, so run it a few times
and read the ratios (both sides share whatever else runs)."""
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
ONE_MIB_CMD = "yes abcdefghijklmnopqrstuvwxyz0123456789 | head -c 1048576"


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
        try:
            data = open(meta, "rb").read()
        except OSError:
            continue
        at = data.find(b"shimPid ")
        if at >= 0:
            line_end = data.index(b"\n", at)
            value_end = data.index(b"\n", line_end + 1)
            pids.append(int(data[line_end + 1:value_end]))
    return pids


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import burners, percentile, row, status_kib  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
from live_helpers import cpu_seconds  # noqa: E402


def alternate(conn, rounds, body=None, baseline=("bash", "-c", "true"), capture=False):
    """`rounds` pairs: one exec through the API, then the baseline as a
    process, so both see the same moment of the machine. Seconds each."""
    body = body or {"cmd": "true"}
    api, direct = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        status, result = call(conn, "POST", "/v1/exec", body)
        api.append(time.perf_counter() - t)
        assert status == 200 and result["exitCode"] == 0, result
        t = time.perf_counter()
        subprocess.run(baseline, capture_output=capture)
        direct.append(time.perf_counter() - t)
    return api, direct


def ratio_rows(name, api, direct, goal):
    a50, d50 = percentile(api, 50) * 1000, percentile(direct, 50) * 1000
    a99, d99 = percentile(api, 99) * 1000, percentile(direct, 99) * 1000
    row(f"{name} p50", f"{a50:.2f} ms", f"{d50:.2f} ms", f"{a50 / d50:.2f}x ({goal})")
    row(f"{name} p99", f"{a99:.2f} ms", f"{d99:.2f} ms", f"{a99 / d99:.2f}x")


def bench_spawn(conn):
    alternate(conn, 20)  # warm up both paths
    api, direct = alternate(conn, 300)
    ratio_rows("exec `true` quiet (API vs bash -c true)", api, direct, "goal <= 1.5x")


def machine_cpu_seconds():
    """CPU time every process of this machine has used (user, system and
    interrupts, not steal: another tenant's time on the host is not ours)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    return (fields[0] + fields[1] + fields[2] + fields[5] + fields[6]) / os.sysconf("SC_CLK_TCK")


def back_to_back(run, rounds, boxd_pid):
    """`rounds` calls of `run` in a row, then what the machine does after
    (a spare made after the last answer): seconds of wall, of the machine's
    CPU and of boxd's own, each per call."""
    time.sleep(0.3)
    machine, own, t = machine_cpu_seconds(), cpu_seconds(boxd_pid), time.perf_counter()
    for _ in range(rounds):
        run()
    wall = time.perf_counter() - t
    time.sleep(0.3)
    return (wall / rounds, (machine_cpu_seconds() - machine) / rounds,
            (cpu_seconds(boxd_pid) - own) / rounds)


def bench_cpu(conn, boxd_pid, rounds=500):
    """What a command costs the box: the CPU of every process, the spare
    made for the next command included, against `bash -c true` spawned by
    the caller; back to back, so the spares' making runs beside the calls."""
    def api():
        status, result = call(conn, "POST", "/v1/exec", {"cmd": "true"})
        assert status == 200 and result["exitCode"] == 0, result

    api_wall, api_cpu, own = back_to_back(api, rounds, boxd_pid)
    direct_wall, direct_cpu, _ = back_to_back(lambda: subprocess.run(["bash", "-c", "true"]),
                                              rounds, boxd_pid)
    row("exec `true` back to back, wall per call", f"{api_wall * 1000:.2f} ms",
        f"{direct_wall * 1000:.2f} ms", f"{api_wall / direct_wall:.2f}x")
    row("exec `true` back to back, machine CPU per call", f"{api_cpu * 1000:.2f} ms",
        f"{direct_cpu * 1000:.2f} ms", f"{api_cpu / direct_cpu:.2f}x (every process)")
    row("  of which boxd's own", f"{own * 1000:.2f} ms", "", "")


def bench_loaded(conn):
    busy = burners()
    try:
        time.sleep(0.2)
        alternate(conn, 10)
        api, direct = alternate(conn, 200)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    ratio_rows(f"exec `true` {len(busy)} busy loops", api, direct, "goal <= 2x")


def bench_parallel(sock, clients=4, rounds=60):
    """`clients` processes at once, each alternating the two as above."""
    readers = []
    for _ in range(clients):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            conn = Unix(sock)
            alternate(conn, 5)
            api, direct = alternate(conn, rounds)
            os.write(w, json.dumps([api, direct]).encode())
            os._exit(0)
        os.close(w)
        readers.append((pid, r))
    api, direct = [], []
    for pid, r in readers:
        data = b""
        while chunk := os.read(r, 65536):
            data += chunk
        os.close(r)
        os.waitpid(pid, 0)
        a, d = json.loads(data)
        api += a
        direct += d
    ratio_rows(f"exec `true` {clients} clients at once", api, direct, "goal <= 2x")


def bench_output(conn):
    body = {"cmd": ONE_MIB_CMD, "maxOutputBytes": 2 << 20}
    status, result = call(conn, "POST", "/v1/exec", body)
    assert status == 200 and len(result["stdout"]) == 1 << 20, (status, len(result.get("stdout", "")))
    api, direct = alternate(conn, 40, body, ("bash", "-c", ONE_MIB_CMD), capture=True)
    a50, d50 = percentile(api, 50) * 1000, percentile(direct, 50) * 1000
    row("1 MiB output, all returned, p50", f"{a50:.2f} ms", f"{d50:.2f} ms",
        f"{a50 / d50:.2f}x (bash -c, output read by the caller)")


def bench_throughput(conn, boxd_pid, run_dir, work):
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            total = status_kib(boxd_pid) + sum(status_kib(p) for p in shim_pids(run_dir)
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
    rss = statistics.mean(status_kib(p) for p in pids)
    pss = statistics.mean(pss_kib(p) for p in pids)
    row("500 background jobs at once", f"{health['procs']['running']} running",
        f"{started:.1f} s to start", "")
    row("RSS per shim (PSS) with 500 jobs", f"{rss / 1024:.2f} MiB", f"({pss / 1024:.2f} MiB)",
        f"{rss / 1024:.0%} of the 1 MiB goal")
    for bg_id in ids:
        call(conn, "POST", f"/v1/procs/{bg_id}/stop", {"signal": "SIGKILL"})


def main():
    root = tempfile.mkdtemp(prefix="bench-exec-")
    # The run dir on tmpfs, as in a box (/run/boxd): on the disk its state
    # dirs' churn measures the file system's inode allocator as much as boxd.
    ram = tempfile.mkdtemp(prefix="bench-exec-run-", dir="/dev/shm") \
        if os.path.isdir("/dev/shm") else root
    work, run = os.path.join(root, "work"), os.path.join(ram, "run")
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
        parts = sys.argv[1:] or ["spawn", "cpu", "loaded", "parallel", "output", "throughput",
                                 "many"]
        if "spawn" in parts:
            bench_spawn(conn)
        if "cpu" in parts:
            bench_cpu(conn, proc.pid)
        if "loaded" in parts:
            bench_loaded(conn)
        if "parallel" in parts:
            bench_parallel(sock)
        if "output" in parts:
            bench_output(conn)
        if "throughput" in parts:
            bench_throughput(conn, proc.pid, run, work)
        if "many" in parts:
            bench_many(conn, run)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(ram, ignore_errors=True)


if __name__ == "__main__":
    main()
