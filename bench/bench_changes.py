#!/usr/bin/env python3
"""The changes journal beside `inotifywait -m -r` (inotify-tools), what a
user would otherwise run to watch a tree.

A tree of 200,000 files in 2,000 folders (100 a folder, 20 folders under
each of 100) is made before boxd starts. Rows:

  watch setup       boxd: from its start to a cursor that answers (the walk
                    done); inotifywait: to "Watches established."
  longest call      the slowest GET /v1/steps while boxd walks (every 20 ms)
  memory            boxd's resident size after the walk, less an idle boxd's
                    on an empty work dir; inotifywait's whole resident size
  per folder        those over the folders watched; the kernel's side (a
                    mark and the inode it pins, about 1 KiB a watch) is the
                    same for both and too small to see in /proc/meminfo's
                    Slab beside the noise (the marks' slab is merged away)
  event delay       p50/p95 over 200 writes 10 ms apart, from the write's
                    return to the change's line read off a follow (boxd) or
                    off inotifywait's stdout
  a build's 100,000 files   written as fast as Python can while boxd
                    watches: whether a cursor from before still answers (no
                    lost event), and boxd's resident size after"""
import json
import os
import select
import subprocess
import time
import urllib.parse

from benchlib import BenchBoxd, UnixHTTP, percentile, row

FOLDERS, PER_FOLDER = 2000, 100
WRITES = 200


def get(boxd, path):
    conn = UnixHTTP(boxd.socket)
    conn.request("GET", path)
    answer = conn.getresponse()
    body = answer.read()
    conn.close()
    return json.loads(body)


def make_tree(root, folders=FOLDERS, per_folder=PER_FOLDER, prefix="d"):
    for i in range(folders):
        folder = os.path.join(root, f"{prefix}{i // 20}", f"{prefix}{i}")
        os.makedirs(folder, exist_ok=True)
        for j in range(per_folder):
            with open(os.path.join(folder, f"f{j}"), "w"):
                pass


def ready(boxd):
    cursor = get(boxd, "/v1/files/changes")["cursor"]
    answer = get(boxd, "/v1/files/changes?since=" + urllib.parse.quote(cursor))
    return cursor if not answer.get("all") else None


def boxd_setup(boxd):
    """Seconds to a cursor that answers, and the slowest health call meanwhile."""
    started, slowest = time.perf_counter(), 0.0
    while True:
        before = time.perf_counter()
        get(boxd, "/v1/steps")
        slowest = max(slowest, time.perf_counter() - before)
        cursor = ready(boxd)
        if cursor:
            return time.perf_counter() - started, slowest, cursor
        time.sleep(0.02)


def follow_delays(boxd, work):
    conn = UnixHTTP(boxd.socket)
    conn.request("GET", "/v1/files/changes?follow=1")
    answer = conn.getresponse()
    answer.readline()  # the first cursor
    delays = []
    target = os.path.join(work, "d0", "d0", "f0")
    for i in range(WRITES):
        with open(target, "a") as f:
            f.write("x")
        written = time.perf_counter()
        while True:
            line = json.loads(answer.readline())
            if line.get("path") == target:
                delays.append(time.perf_counter() - written)
                break
        time.sleep(0.01)
    conn.close()
    return delays


def inotifywait_numbers(work):
    started = time.perf_counter()
    proc = subprocess.Popen(["inotifywait", "-m", "-r", "-e", "modify,create,delete,move",
                             "--format", "%w%f", work], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    while b"Watches established" not in proc.stderr.readline():
        pass
    setup = time.perf_counter() - started
    rss = int(open(f"/proc/{proc.pid}/status").read().split("VmRSS:")[1].split()[0])
    target = os.path.join(work, "d0", "d0", "f0")
    delays = []
    for i in range(WRITES):
        with open(target, "a") as f:
            f.write("x")
        written = time.perf_counter()
        while True:
            select.select([proc.stdout], [], [], 5)
            if proc.stdout.readline().strip().decode() == target:
                delays.append(time.perf_counter() - written)
                break
        time.sleep(0.01)
    proc.terminate()
    proc.wait()
    return setup, rss, delays


def main():
    with BenchBoxd() as idle:
        time.sleep(0.5)
        idle_kib = idle.rss_kib()
    boxd = BenchBoxd()
    work = os.path.join(boxd.root, "work")
    os.makedirs(work)
    make_tree(work)
    folders = FOLDERS + FOLDERS // 20 + 1
    with boxd:
        setup, slowest, cursor = boxd_setup(boxd)
        time.sleep(0.5)
        boxd_kib = boxd.rss_kib() - idle_kib
        delays = follow_delays(boxd, work)
        tool_setup, tool_kib, tool_delays = inotifywait_numbers(work)
        row("changes: watch setup, 200,000 files (s)", f"{setup:.2f}", f"{tool_setup:.2f}",
            f"{setup / tool_setup:.2f}x inotifywait -m -r")
        row("changes: longest call during it (ms)", f"{slowest * 1000:.1f}", "-", "")
        row("changes: memory after setup (MiB)", f"{boxd_kib / 1024:.1f}",
            f"{tool_kib / 1024:.1f}", f"{boxd_kib / max(tool_kib, 1):.2f}x")
        row(f"changes: per watched folder ({folders}) (bytes)",
            f"{boxd_kib * 1024 // folders}", f"{tool_kib * 1024 // folders}",
            "+ the kernel's ~1 KiB a watch, both")
        for p in (50, 95):
            ours, theirs = percentile(delays, p), percentile(tool_delays, p)
            row(f"changes: write to event p{p} (ms)", f"{ours * 1000:.2f}",
                f"{theirs * 1000:.2f}", f"{ours / theirs:.2f}x")
        # A build writing 100,000 files.
        cursor = ready(boxd)
        started = time.perf_counter()
        make_tree(os.path.join(work, "build"), folders=1000, per_folder=100, prefix="b")
        took = time.perf_counter() - started
        answer = get(boxd, "/v1/files/changes?since=" + urllib.parse.quote(cursor))
        lost = "all: true (lost)" if answer.get("all") else f"{len(answer['changes'])} changes"
        row("changes: a build's 100,000 files (s to write)", f"{took:.2f}", "-", lost)
        row("changes: memory after the build (MiB)", f"{(boxd.rss_kib() - idle_kib) / 1024:.1f}",
            "-", "journal holds them all (< 1 h)")


if __name__ == "__main__":
    main()
