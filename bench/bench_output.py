#!/usr/bin/env python3
"""Reading a command's log through boxd beside reading the file.

A background command writes ~100 MB (base64 text in lines of 100, as logs
are mostly text, and 4 KiB of raw bytes). Then, best of 3 passes each:

  output?offset=0   GET /v1/exec/{id}/output, the whole NDJSON answer read
                    off the socket (and, on a second row, decoded back to
                    the log's bytes by the client, json + base64)
  procs log         GET /v1/procs/{id}/log in 16 MiB pieces (offset/limit)
  cat               `cat LOG.1 LOG` into a pipe read by the same client

Rows as bench/run prints them: name | boxd | baseline | ratio, the
throughput in MB/s of log bytes; the log is in the page cache for all."""
import base64
import glob
import json
import os
import subprocess
import time

from benchlib import BenchBoxd, UnixHTTP, row

CMD = "head -c 75000000 /dev/urandom | base64 -w 100; head -c 4096 /dev/urandom"
PASSES = 3


def call(boxd, method, path, obj=None):
    conn = UnixHTTP(boxd.socket)
    conn.request(method, path, body=json.dumps(obj) if obj is not None else None,
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data, response


def wait_ended(boxd, bg):
    while True:
        _, data, _ = call(boxd, "GET", f"/v1/procs/{bg}")
        if json.loads(data)["state"] == "exited":
            return
        time.sleep(0.1)


def read_output(boxd, bg, decode):
    conn = UnixHTTP(boxd.socket)
    conn.request("GET", f"/v1/exec/{bg}/output?offset=0")
    response = conn.getresponse()
    total = 0
    if decode:
        for line in response:
            event = json.loads(line)
            if event["type"] == "output":
                data = event["data"]
                raw = (base64.b64decode(data) if event.get("encoding") == "base64"
                       else data.encode())
                total += len(raw)
    else:
        while True:
            piece = response.read1(1 << 20)
            if not piece:
                break
            total += len(piece)
    conn.close()
    return total


def read_procs_log(boxd, bg, size):
    offset = 0
    while offset < size:
        _, data, response = call(boxd, "GET", f"/v1/procs/{bg}/log?offset={offset}"
                                              f"&limit={16 << 20}")
        offset = int(response.getheader("X-Log-Next-Offset"))
        if not data:
            break
    return offset


def read_cat(paths):
    proc = subprocess.Popen(["cat", *paths], stdout=subprocess.PIPE)
    total = 0
    while True:
        piece = proc.stdout.read1(1 << 20)
        if not piece:
            break
        total += len(piece)
    proc.wait()
    return total


def best(function):
    times = []
    for _ in range(PASSES):
        began = time.perf_counter()
        function()
        times.append(time.perf_counter() - began)
    return min(times)


def main():
    with BenchBoxd() as boxd:
        _, data, _ = call(boxd, "POST", "/v1/exec", {"cmd": CMD, "background": True})
        bg = json.loads(data)["bgId"]
        wait_ended(boxd, bg)
        paths = sorted(glob.glob(os.path.join(boxd.root, "work", ".sbx", "logs", bg + ".log*")),
                       reverse=True)  # LOG.1 first
        size = sum(os.path.getsize(p) for p in paths)
        read_cat(paths)  # into the page cache
        cat = size / best(lambda: read_cat(paths)) / 1e6
        raw = size / best(lambda: read_output(boxd, bg, False)) / 1e6
        decoded = size / best(lambda: read_output(boxd, bg, True)) / 1e6
        procs = size / best(lambda: read_procs_log(boxd, bg, size)) / 1e6
        mb = f"{size / 1e6:.0f} MB"
        row(f"output?offset=0, {mb} log, read", f"{raw:.0f} MB/s", f"cat {cat:.0f} MB/s",
            f"{raw / cat:.2f}x cat")
        row(f"output?offset=0, {mb} log, decoded", f"{decoded:.0f} MB/s", f"cat {cat:.0f} MB/s",
            f"{decoded / cat:.2f}x cat")
        row(f"procs/log 16 MiB pieces, {mb} log", f"{procs:.0f} MB/s", f"output {raw:.0f} MB/s",
            f"output {raw / procs:.2f}x procs/log")


if __name__ == "__main__":
    main()
