"""Foundation figures: health latency against a bare unix-socket echo, time
from exec to ready, idle memory and idle wakeups."""
import os
import subprocess
import time

from benchlib import BUILD_DIR, BenchBoxd, percentile, row

LATENCY = os.path.join(BUILD_DIR, "bench", "latency")
ROUNDS = 20000


def latency(*args):
    out = subprocess.run([LATENCY, *args], capture_output=True, text=True, check=True).stdout
    return [float(x) for x in out.split()]


def health_latency():
    with BenchBoxd() as boxd:
        health = latency("http", boxd.socket, "/v1/health", str(ROUNDS))
        # The echo answers as many bytes as health's answer has.
        out = subprocess.run(["curl", "-s", "-i", "--unix-socket", boxd.socket,
                              "http://boxd/v1/health"], capture_output=True).stdout
        echo = latency("echo", str(ROUNDS), str(len(out)))
        steps = latency("http", boxd.socket, "/v1/steps", str(ROUNDS))
    row("health round trip p50 (us)", f"{health[0]:.1f}", f"echo {echo[0]:.1f}",
        f"{health[0] / echo[0]:.2f}x (target <= 2x)")
    row("health round trip p99 (us)", f"{health[2]:.1f}", f"echo {echo[2]:.1f}",
        f"{health[2] / echo[2]:.2f}x")
    row("steps round trip p50 (us)", f"{steps[0]:.1f}", f"echo {echo[0]:.1f}",
        f"{steps[0] / echo[0]:.2f}x")


def busy_cost(jobs=200):
    """What activity.busy costs a health answer: the background reason walks
    the running commands at every answer (nothing is kept up to date while
    idle); its worst case is a box with many of them, and the lock held."""
    with BenchBoxd() as boxd:
        idle_box = latency("http", boxd.socket, "/v1/health", str(ROUNDS))
        for _ in range(jobs):
            subprocess.run(["curl", "-s", "--unix-socket", boxd.socket, "-H",
                            "Content-Type: application/json", "-d",
                            '{"cmd": "sleep 600", "background": true}',
                            "http://boxd/v1/exec"], capture_output=True, check=True)
        subprocess.run(["curl", "-s", "--unix-socket", boxd.socket, "-X", "PUT", "-d",
                        '{"locked": true}', "http://boxd/v1/lock"], capture_output=True)
        busy = latency("http", boxd.socket, "/v1/health", str(ROUNDS))
    row(f"health p50, busy: {jobs} background + lock (us)", f"{busy[0]:.1f}",
        f"idle {idle_box[0]:.1f}", f"{busy[0] / idle_box[0]:.2f}x")


def start_to_ready():
    samples = []
    for _ in range(30):
        with BenchBoxd() as boxd:
            samples.append((time.perf_counter() - boxd.started) * 1000)
    # The baseline: starting /bin/true and seeing it exit, the floor of any exec.
    floor = []
    for _ in range(30):
        start = time.perf_counter()
        subprocess.run(["/bin/true"])
        floor.append((time.perf_counter() - start) * 1000)
    row("start to serving p50 (ms)", f"{percentile(samples, 50):.2f}",
        f"true {percentile(floor, 50):.2f}", "target <= 20 ms")


def idle():
    with BenchBoxd() as boxd:
        subprocess.run(["curl", "-s", "--unix-socket", boxd.socket, "http://boxd/v1/health"],
                       capture_output=True)
        time.sleep(0.5)
        rss = boxd.rss_kib()
        status = open(f"/proc/{boxd.proc.pid}/status").read()
        before = int(status.split("voluntary_ctxt_switches:")[1].split()[0])
        stat_before = open(f"/proc/{boxd.proc.pid}/stat").read().split()[13:15]
        time.sleep(5)
        status = open(f"/proc/{boxd.proc.pid}/status").read()
        after = int(status.split("voluntary_ctxt_switches:")[1].split()[0])
        stat_after = open(f"/proc/{boxd.proc.pid}/stat").read().split()[13:15]
    row("idle RSS (KiB)", str(rss), "4096 target", f"{rss / 4096:.2f} of target")
    cpu = sum(int(a) - int(b) for a, b in zip(stat_after, stat_before))
    row("idle wakeups / CPU ticks in 5 s", f"{after - before} / {cpu}", "0 / 0 target", "")


health_latency()
busy_cost()
start_to_ready()
idle()
