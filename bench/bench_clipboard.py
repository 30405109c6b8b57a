#!/usr/bin/python3
"""Clipboard figures on an Xvfb, side by side with what an agent would do
without the route: run xclip through POST /v1/exec.

Rows: name | boxd | baseline | ratio
  set p50/p99     PUT /v1/screen/clipboard with 20 bytes of text  vs
                  POST /v1/exec `printf ... | xclip -i -selection clipboard`
  get p50/p99     GET /v1/screen/clipboard (boxd owns it: its own copy)  vs
                  POST /v1/exec `xclip -o -selection clipboard`
  get p50/p99     the same with another program (xclip) owning it: the
  (other owner)   worker asks it (TARGETS, then UTF8_STRING)
  3 MiB get       GET of 3 MiB another program owns (INCR)  vs  exec xclip -o
Alternating, on one kept-alive connection each, after a warm-up; the worker
is already running. The machine is shared: read the ratios.

    bench/bench_clipboard.py"""
import json
import os
import subprocess
import sys
import time

from benchlib import BenchBoxd, UnixHTTP, percentile, row

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from screen_helpers import Xvfb  # noqa: E402

ROUNDS = 200
TEXT = b"hello from the bench"


def timed(conn, method, path, body=None, headers=None):
    """(milliseconds, status, body) of one call."""
    started = time.perf_counter()
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    return (time.perf_counter() - started) * 1000, response.status, data


def exec_body(command, display):
    return json.dumps({"cmd": f"DISPLAY={display} {command}"}).encode()


def compare(name, ours, theirs, rounds=ROUNDS):
    """Runs `ours()` and `theirs()` alternately, each giving milliseconds."""
    for _ in range(5):
        ours()
        theirs()
    a, b = [], []
    for _ in range(rounds):
        a.append(ours())
        b.append(theirs())
    for p in (50, 99):
        x, y = percentile(a, p), percentile(b, p)
        row(f"{name} p{p}", f"{x:.2f} ms", f"{y:.2f} ms", f"{x / y:.2f}x")


def main():
    x = Xvfb()
    try:
        with BenchBoxd("--display", x.display) as boxd:
            api = UnixHTTP(boxd.socket)
            runner = UnixHTTP(boxd.socket)
            plain = {"Content-Type": "text/plain; charset=utf-8"}
            json_type = {"Content-Type": "application/json"}

            def put():
                ms, status, _ = timed(api, "PUT", "/v1/screen/clipboard", TEXT, plain)
                assert status == 200
                return ms

            def exec_set():
                ms, status, body = timed(runner, "POST", "/v1/exec", exec_body(
                    f"printf '{TEXT.decode()}' | xclip -i -selection clipboard >/dev/null 2>&1",
                    x.display), json_type)
                assert status == 200 and json.loads(body)["exitCode"] == 0, body
                return ms

            def get():
                ms, status, body = timed(api, "GET", "/v1/screen/clipboard")
                assert status == 200 and body == TEXT, (status, body[:80])
                return ms

            def exec_get():
                ms, status, body = timed(runner, "POST", "/v1/exec", exec_body(
                    "xclip -o -selection clipboard", x.display), json_type)
                assert status == 200 and json.loads(body)["exitCode"] == 0, body
                return ms

            compare("clipboard set", put, exec_set)
            put()
            compare("clipboard get (boxd owns it)", get, exec_get)
            exec_set()
            compare("clipboard get (xclip owns it)", get, exec_get)
            big = b"0123456789abcdef" * (3 * 1024 * 1024 // 16)
            copier = subprocess.Popen(["xclip", "-quiet", "-i", "-selection", "clipboard"],
                                      env=x.env(), stdin=subprocess.PIPE,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            copier.stdin.write(big)
            copier.stdin.close()
            while timed(api, "GET", "/v1/screen/clipboard")[2] != big:
                time.sleep(0.05)

            def get_big():
                ms, status, body = timed(api, "GET", "/v1/screen/clipboard")
                assert status == 200 and body == big
                return ms

            def exec_get_big():
                ms, status, body = timed(runner, "POST", "/v1/exec", json.dumps(
                    {"cmd": f"DISPLAY={x.display} xclip -o -selection clipboard",
                     "maxOutputBytes": 8 << 20}).encode(), json_type)
                assert status == 200 and len(json.loads(body)["stdout"]) == len(big), body[:200]
                return ms

            compare("clipboard get 3 MiB (INCR)", get_big, exec_get_big, rounds=20)
            copier.kill()
            copier.wait()
    finally:
        x.kill()


if __name__ == "__main__":
    main()
