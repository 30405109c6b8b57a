"""Freeze figures (docs/freeze.md): a freeze and thaw of running commands
through boxd against the same cgroup writes and waits done by a shell script
(what a person would do by hand), and a reclaim against `sync; echo 3 >
drop_caches` (which leaves the dropped pages' old contents in memory)."""
import json
import os
import subprocess
import tempfile
import time

from benchlib import BenchBoxd, UnixHTTP, percentile, row

COMMANDS = 50
ROUNDS = 10
# What a person would run: freeze each cgroup, wait until each says frozen,
# then the same back.
BY_HAND = r"""
for d in "$@"; do echo 1 > "$d/cgroup.freeze"; done
for d in "$@"; do until grep -qx 'frozen 1' "$d/cgroup.events"; do :; done; done
for d in "$@"; do echo 0 > "$d/cgroup.freeze"; done
"""




def call(path, method, url, body=None):
    conn = UnixHTTP(path, timeout=120)
    conn.request(method, url, json.dumps(body) if body is not None else None,
                 {"Content-Type": "application/json"})
    answer = json.loads(conn.getresponse().read())
    conn.close()
    return answer


def cgroup_of(pid):
    mount = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[fields.index("-") + 1] == "cgroup2":
                mount = fields[4]
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            if line.startswith("0::") and mount:
                return mount + line[3:].strip()
    return None


def freeze_and_thaw():
    with BenchBoxd() as boxd:
        jobs = [call(boxd.socket, "POST", "/v1/exec", {"cmd": "sleep 600", "background": True})
                for _ in range(COMMANDS)]
        dirs = [cgroup_of(job["pid"]) for job in jobs]
        if None in dirs or not os.path.exists(f"{dirs[0]}/cgroup.freeze"):
            print("freeze: no cgroup v2 freezer for boxd's commands here: skipped")
            return
        through = []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            call(boxd.socket, "POST", "/v1/freeze", {"freezeCommands": True})
            call(boxd.socket, "POST", "/v1/thaw", {})
            through.append((time.perf_counter() - started) * 1000)
        by_hand = []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            subprocess.run(["sh", "-c", BY_HAND, "sh", *dirs], check=True)
            by_hand.append((time.perf_counter() - started) * 1000)
    boxd_ms, hand_ms = percentile(through, 50), percentile(by_hand, 50)
    row(f"freeze + thaw of {COMMANDS} commands p50 (ms)", f"{boxd_ms:.1f}",
        f"sh {hand_ms:.1f}", f"{boxd_ms / hand_ms:.2f}x")


def reclaim():
    if os.geteuid() != 0:
        print("freeze: reclaim needs root: skipped")
        return
    with tempfile.NamedTemporaryFile(dir="/var/tmp") as big, BenchBoxd() as boxd:
        block = os.urandom(1 << 20)
        for _ in range(512):
            big.write(block)
        big.flush()

        def read_back():
            with open(big.name, "rb") as f:
                while f.read(1 << 20):
                    pass
        read_back()
        started = time.perf_counter()
        answer = call(boxd.socket, "POST", "/v1/freeze", {"reclaim": True})
        through = (time.perf_counter() - started) * 1000
        call(boxd.socket, "POST", "/v1/thaw", {})
        read_back()
        started = time.perf_counter()
        subprocess.run(["sh", "-c", "sync; echo 3 > /proc/sys/vm/drop_caches"], check=True)
        by_hand = (time.perf_counter() - started) * 1000
    flush = answer["flush"]
    row("freeze with reclaim after reading 512 MiB (ms)", f"{through:.0f}",
        f"drop {by_hand:.0f}", f"{through / by_hand:.2f}x (zeroed "
        f"{flush['zeroedBytes'] >> 20} MiB in {flush['zeroMs']} ms)")


freeze_and_thaw()
reclaim()
