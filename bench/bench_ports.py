"""Ports: GET /v1/ports against `ss -ltnp` (what a person would run: the same
walk of /proc/*/fd), on a box with a few hundred processes, and what a
listing costs everyone else: health's latency while listings run back to
back, against health alone (the /proc walk runs on a thread, so the loop
should not notice).

    BENCH_PORTS_PROCESSES=300   extra processes (default 300)
    BENCH_PORTS_FDS=20          open files each (default 20)
"""
import os
import shutil
import signal
import subprocess
import sys
import time

from benchlib import BenchBoxd, UnixHTTP, percentile, row

PROCESSES = int(os.environ.get("BENCH_PORTS_PROCESSES", "300"))
FDS = int(os.environ.get("BENCH_PORTS_FDS", "20"))
ROUNDS = 30

# A parent that forks the crowd; the last child also listens, so a listing
# walks every process before it finds that listener's holder.
CROWD = r"""
import os, signal, socket, sys, time
count, fds = int(sys.argv[1]), int(sys.argv[2])
children = []
for i in range(count):
    pid = os.fork()
    if pid == 0:
        held = [open("/dev/null") for _ in range(fds)]
        if i == count - 1:
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
            print(s.getsockname()[1], flush=True)
        signal.pause()
        os._exit(0)
    children.append(pid)
def end(*_):
    for child in children:
        os.kill(child, signal.SIGKILL)
    os._exit(0)
signal.signal(signal.SIGTERM, end)
while True:
    signal.pause()
"""


LISTER = r"""
import socket, sys
while True:
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
    s.sendall(b"GET /v1/ports HTTP/1.0\r\n\r\n")
    while s.recv(65536):
        pass
    s.close()
"""




def timed_get(path, target):
    connection = UnixHTTP(path, timeout=30)
    start = time.perf_counter()
    connection.request("GET", target)
    response = connection.getresponse()
    response.read()
    took = (time.perf_counter() - start) * 1000
    connection.close()
    assert response.status == 200, response.status
    return took


def health_samples(path, count):
    return [timed_get(path, "/v1/health") for _ in range(count)]


def main():
    crowd = subprocess.Popen([sys.executable, "-c", CROWD, str(PROCESSES), str(FDS)],
                             stdout=subprocess.PIPE)
    crowd.stdout.readline()
    try:
        with BenchBoxd() as boxd:
            timed_get(boxd.socket, "/v1/ports")
            ports = [timed_get(boxd.socket, "/v1/ports") for _ in range(ROUNDS)]
            ss = []
            if shutil.which("ss"):
                for _ in range(ROUNDS):
                    start = time.perf_counter()
                    subprocess.run(["ss", "-ltnp"], capture_output=True, check=True)
                    ss.append((time.perf_counter() - start) * 1000)
            processes = len([name for name in os.listdir("/proc") if name.isdigit()])
            p50 = percentile(ports, 50)
            baseline = percentile(ss, 50) if ss else float("nan")
            row(f"ports p50, {processes} processes (ms)", f"{p50:.1f}", f"ss -ltnp {baseline:.1f}",
                f"{p50 / baseline:.2f}x")
            quiet = health_samples(boxd.socket, 2000)
            # Listings back to back from a process of their own (a thread
            # here would share the GIL with the health timings).
            lister = subprocess.Popen([sys.executable, "-c", LISTER, boxd.socket])
            try:
                time.sleep(0.2)
                busy = health_samples(boxd.socket, 2000)
            finally:
                lister.kill()
                lister.wait()
            for p in (50, 99):
                row(f"health p{p} while ports list (ms)", f"{percentile(busy, p):.3f}",
                    f"quiet {percentile(quiet, p):.3f}",
                    f"{percentile(busy, p) / percentile(quiet, p):.2f}x")
    finally:
        crowd.send_signal(signal.SIGTERM)
        crowd.wait()


main()
