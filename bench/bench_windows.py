"""Windows: GET /v1/screen/windows (ids, titles, classes, pids, geometry,
focus, in one answer) against what an agent would run otherwise through
POST /v1/exec: `xdotool search --onlyvisible --name .` and a
`xdotool getwindowname` per window (titles only), on one Xvfb with 2 and
with 20 xterms; and the same xdotool loop run directly as processes (no
HTTP). Medians of alternated rounds on one kept-alive connection.

    BENCH_WINDOWS_ROUNDS=30   rounds per figure (default 30)
"""
import json
import os
import statistics
import subprocess
import sys
import time

from benchlib import BenchBoxd, UnixHTTP, row

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from screen_helpers import Xvfb  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_WINDOWS_ROUNDS", "30"))
LOOP = "for w in $(xdotool search --onlyvisible --name .); do echo $w; xdotool getwindowname $w; done"


def call(conn, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def xterms(x, first, count):
    """xterms number `first` to `count` - 1, once all `count` are mapped."""
    env = x.env()
    procs = [subprocess.Popen(["xterm", "-T", f"bench window {i}", "-class", f"Bench{i}",
                               "-geometry", f"40x5+{(i % 5) * 250}+{(i // 5) * 150}"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for i in range(first, count)]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = x.run(["xdotool", "search", "--onlyvisible", "--class", "Bench"], check=False).stdout
        if len(out.split()) == count:
            return procs
        time.sleep(0.1)
    raise RuntimeError(f"{count} xterms did not map")


def measure(conn, x, count):
    exec_body = {"cmd": LOOP, "env": {"DISPLAY": x.display}}
    api, via_exec, direct = [], [], []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        status, answer = call(conn, "GET", "/v1/screen/windows")
        api.append((time.perf_counter() - t) * 1000)
        assert status == 200 and len(answer["windows"]) == count, answer
        t = time.perf_counter()
        status, result = call(conn, "POST", "/v1/exec", exec_body)
        via_exec.append((time.perf_counter() - t) * 1000)
        assert status == 200 and result["exitCode"] == 0, result
        t = time.perf_counter()
        subprocess.run(["sh", "-c", LOOP], env=x.env(), capture_output=True, check=True)
        direct.append((time.perf_counter() - t) * 1000)
    api_ms, exec_ms, direct_ms = (statistics.median(v) for v in (api, via_exec, direct))
    row(f"windows list, {count} windows p50 (ms)", f"{api_ms:.2f}", f"exec xdotool {exec_ms:.1f}",
        f"{exec_ms / api_ms:.0f}x faster")
    row(f"windows list vs xdotool directly, {count} (ms)", f"{api_ms:.2f}", f"xdotool {direct_ms:.1f}",
        f"{direct_ms / api_ms:.0f}x faster")


def main():
    x = Xvfb()
    procs = []
    try:
        with BenchBoxd("--display", x.display) as boxd:
            conn = UnixHTTP(boxd.socket)
            for count in (2, 20):
                procs += xterms(x, len(procs), count)
                call(conn, "GET", "/v1/screen/windows")  # the worker started and connected
                measure(conn, x, count)
            conn.close()
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        x.kill()


if __name__ == "__main__":
    main()
