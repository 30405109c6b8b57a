#!/usr/bin/env python3
"""Masking throughput and latency: boxd's masker beside sed and grep -F.

20 secret values of 24-40 characters, 64 MB of log-like text with a value
(raw, base64, base64 cut by a line break, hex, printf %q or URL-encoded) on
about one line in 200. Rows as bench/run prints them: name | boxd | baseline
| ratio. Throughput is the best of 5 passes by CPU time (the machine may be
shared; the wall-clock figure is printed beside it).

MASK_BENCH_BASELINE=PATH runs another mask-bench (built from an older
commit) on the same data, alternating with this one, and adds rows that
compare the two: the way to measure a change on a shared machine.
"""
import base64
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

from benchlib import BUILD_DIR, row

BENCH = os.path.join(BUILD_DIR, "bench", "mask-bench")
SIZE = int(os.environ.get("MASK_BENCH_MB", "64")) * 1000 * 1000

WORDS = ("request processed user item order cache miss hit retry upstream "
         "connection closed opened worker queue job done failed ok status "
         "duration bytes path method GET POST PUT latency shard replica").split()


def make_values(rng):
    # Some punctuation, so the URL and base64 forms differ from the raw ones.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_@:!%"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(24, 40)))
            for _ in range(20)]


def make_line(rng, values):
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 10)))
    line = "2026-11-29T08:%02d:%02d.%03dZ INFO worker[%d]: %s id=%032x status=%d" % (
        rng.randint(0, 59), rng.randint(0, 59), rng.randint(0, 999),
        rng.randint(100, 99999), words, rng.getrandbits(128), rng.choice((200, 404, 500)))
    if rng.random() < 0.005:
        value = rng.choice(values)
        encoded = base64.b64encode(("user:" + value).encode()).decode()
        cut = rng.randint(1, len(encoded) - 1)
        form = rng.choice((value, encoded, encoded[:cut] + "\n" + encoded[cut:],
                           value.encode().hex(), shlex.quote(value),
                           urllib.parse.quote(value + "/x y")))
        line += " auth=" + form
    return line + "\n"


def run_timed(cmd, stdin_path, out_path):
    # Output to a real file: GNU grep stops at the first match when its
    # output is /dev/null.
    best = None
    for _ in range(2):
        with open(stdin_path, "rb") as f, open(out_path, "wb") as out:
            t0 = time.monotonic()
            subprocess.run(cmd, stdin=f, stdout=out, check=False)
            t = time.monotonic() - t0
        best = t if best is None else min(best, t)
    return best


def main():
    if not os.path.exists(BENCH):
        sys.exit("build first: %s is missing" % BENCH)
    rng = random.Random(42)
    values = make_values(rng)
    pool = [make_line(rng, values) for _ in range(20000)]
    tmp = tempfile.mkdtemp(prefix="bench-mask-")
    try:
        data = os.path.join(tmp, "data.txt")
        vals = os.path.join(tmp, "values.txt")
        with open(data, "w") as f:
            written = 0
            while written < SIZE:
                chunk = "".join(rng.choice(pool) for _ in range(5000))
                f.write(chunk)
                written += len(chunk)
        with open(vals, "w") as f:
            f.write("\n".join(values) + "\n")
        size = os.path.getsize(data)

        res = {}
        baseline = os.environ.get("MASK_BENCH_BASELINE")
        runs = {"raw": [], "all": [], "base_raw": [], "base_all": []}
        for _ in range(3 if baseline else 1):
            for mode in ("raw", "all"):
                runs[mode].append(json.loads(subprocess.run(
                    [BENCH, data, vals, mode], check=True, capture_output=True,
                    text=True).stdout))
                if baseline:
                    runs["base_" + mode].append(json.loads(subprocess.run(
                        [baseline, data, vals, mode], check=True, capture_output=True,
                        text=True).stdout))
        for mode in runs:
            if runs[mode]:
                res[mode] = max(runs[mode], key=lambda r: r["cpu_mb_per_s"])
        sed_script = os.path.join(tmp, "mask.sed")
        with open(sed_script, "w") as f:
            f.writelines("s/%s/****/g\n" % v for v in values)
        sed = size / run_timed(["sed", "-f", sed_script], data, os.path.join(tmp, "out")) / 1e6
        grep = size / run_timed(["grep", "-c", "-F", "-f", vals], data, os.path.join(tmp, "out")) / 1e6

        raw, enc = res["raw"]["mb_per_s"], res["all"]["mb_per_s"]
        row("mask 20 values raw forms (MB/s)", "%.0f" % raw, "sed %.0f" % sed, "%.1fx" % (raw / sed))
        row("mask 20 values all encodings (MB/s)", "%.0f" % enc, "sed %.0f" % sed, "%.1fx" % (enc / sed))
        row("mask raw forms vs finding (MB/s)", "%.0f" % raw, "grep -F %.0f" % grep, "%.1fx" % (raw / grep))
        row("mask all encodings vs finding (MB/s)", "%.0f" % enc, "grep -F %.0f" % grep, "%.1fx" % (enc / grep))
        cpu_raw, cpu_all = res["raw"]["cpu_mb_per_s"], res["all"]["cpu_mb_per_s"]
        row("mask all encodings, CPU time (MB/s)", "%.0f" % cpu_all, "raw %.0f" % cpu_raw,
            "%.2fx" % (cpu_all / cpu_raw))
        row("mask per-line latency (us)", "%.3f" % res["all"]["line_us"], "1000 target",
            "%.4f of target" % (res["all"]["line_us"] / 1000))
        row("mask set memory per value (KiB)", "%.1f" % (res["all"]["set_bytes"] / 1024 / len(values)),
            "%d forms" % res["all"]["forms"], "%d values" % len(values))
        if baseline:
            for mode in ("raw", "all"):
                now, before = res[mode], res["base_" + mode]
                row("mask %s vs baseline build, CPU (MB/s)" % mode, "%.0f" % now["cpu_mb_per_s"],
                    "%.0f" % before["cpu_mb_per_s"],
                    "%.2fx" % (now["cpu_mb_per_s"] / before["cpu_mb_per_s"]))
            row("mask latency vs baseline build (us)", "%.3f" % res["all"]["line_us"],
                "%.3f" % res["base_all"]["line_us"],
                "%.2fx" % (res["all"]["line_us"] / res["base_all"]["line_us"]))
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
