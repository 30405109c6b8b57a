#!/usr/bin/python3
"""Files one at a time, side by side with what a caller would do otherwise.

Rows: name | boxd | baseline | ratio, each measure twice: against the same
work through POST /v1/exec running coreutils, and against the work done
straight on the machine (no API at all).
  stat p50           GET /v1/files/stat          vs  exec `stat -c ...`  /  os.lstat
  list p50           GET /v1/files/list, 1,000   vs  exec `ls -la`       /  os.scandir + lstat
  put 8 MiB p50      PUT /v1/files               vs  exec `cat > file`   /  a write + fsync + rename
  get 8 MiB p50      GET /v1/files               vs  exec `cat file`     /  a read
  put / get 256 MiB  throughput                  vs  `cp` / `cat > /dev/null`
  peak RSS           boxd during the 256 MiB put

    bench/bench_files.py

The machine is shared: run it a few times and read the ratios."""
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import BenchBoxd, UnixHTTP, row, status_kib  # noqa: E402

ROUNDS = 40


def request(socket_path, method, target, body=None, headers=None):
    connection = UnixHTTP(socket_path)
    connection.request(method, target, body=body, headers=headers or {})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    if response.status >= 300:
        raise RuntimeError(f"{method} {target}: {response.status} {data[:200]!r}")
    return data


def exec_call(socket_path, argv, stdin=None):
    body = {"cmd": " ".join(shlex.quote(a) for a in argv), "maxOutputBytes": 32 << 20}
    if stdin is not None:
        body["stdin"] = stdin
    answer = json.loads(request(socket_path, "POST", "/v1/exec", json.dumps(body).encode(),
                                {"Content-Type": "application/json"}))
    if answer.get("exitCode") != 0:
        raise RuntimeError(f"exec {argv}: {answer}")
    return answer


def p50(work, rounds=ROUNDS):
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def show(name, boxd_s, exec_s, direct_s):
    row(f"{name} vs exec", f"{boxd_s * 1e3:.2f} ms", f"{exec_s * 1e3:.2f} ms",
        f"{boxd_s / exec_s:.2f}x")
    row(f"{name} vs direct", f"{boxd_s * 1e3:.2f} ms", f"{direct_s * 1e3:.3f} ms",
        f"{boxd_s / direct_s:.1f}x")


def bench_small(boxd, work):
    sock = boxd.socket
    path = os.path.join(work, "f.txt")
    with open(path, "w") as f:
        f.write("x" * 1000)
    show("stat p50",
         p50(lambda: request(sock, "GET", "/v1/files/stat?path=f.txt")),
         p50(lambda: exec_call(sock, ["stat", "-c", "%F %a %s %Y", path])),
         p50(lambda: os.lstat(path), 1000))
    folder = os.path.join(work, "many")
    os.makedirs(folder)
    for i in range(1000):
        open(os.path.join(folder, f"{i:04}"), "w").close()

    def direct_list():
        return [entry.stat(follow_symlinks=False) for entry in os.scandir(folder)]
    show("list 1,000 entries p50",
         p50(lambda: request(sock, "GET", "/v1/files/list?path=many"), 20),
         p50(lambda: exec_call(sock, ["ls", "-la", folder]), 20),
         p50(direct_list, 100))


def bench_eight_mib(boxd, work):
    sock = boxd.socket
    data = ("0123456789abcdef" * (1 << 19))  # 8 MiB of text: exec's stdin is a string
    raw = data.encode()
    target = os.path.join(work, "eight.bin")

    def direct_put():
        with open(target + ".tmp", "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.rename(target + ".tmp", target)

    def direct_get():
        with open(target, "rb") as f:
            return f.read()
    show("put 8 MiB p50",
         p50(lambda: request(sock, "PUT", "/v1/files?path=eight.bin", raw), 10),
         p50(lambda: exec_call(sock, ["sh", "-c", f"cat > {shlex.quote(target)}"], stdin=data), 10),
         p50(direct_put, 10))
    show("get 8 MiB p50",
         p50(lambda: request(sock, "GET", "/v1/files?path=eight.bin"), 10),
         p50(lambda: exec_call(sock, ["cat", target]), 10),
         p50(direct_get, 10))


def bench_big(boxd, work):
    sock = boxd.socket
    size = 256 << 20
    source = os.path.join(os.path.dirname(work), "source.bin")
    with open(source, "wb") as f:
        f.write(os.urandom(1 << 20) * (size >> 20))

    def chunks():
        with open(source, "rb") as f:
            while block := f.read(1 << 20):
                yield block
    # The peak from here on: the exec rows above buffer their 8 MiB as JSON.
    with open(f"/proc/{boxd.proc.pid}/clear_refs", "w") as f:
        f.write("5")
    started = time.perf_counter()
    request(sock, "PUT", "/v1/files?path=big.bin", chunks(), {"Content-Length": str(size)})
    put_s = time.perf_counter() - started
    peak = status_kib(boxd.proc.pid, "VmHWM")
    started = time.perf_counter()
    subprocess.run(["cp", source, os.path.join(work, "big-cp.bin")], check=True)
    subprocess.run(["sync", "-f", work], check=True)
    cp_s = time.perf_counter() - started
    row("put 256 MiB throughput vs cp + sync", f"{size / put_s / 2**20:.0f} MiB/s",
        f"{size / cp_s / 2**20:.0f} MiB/s", f"{cp_s / put_s:.2f}x")
    started = time.perf_counter()
    connection = UnixHTTP(sock)
    connection.request("GET", "/v1/files?path=big.bin")
    response = connection.getresponse()
    while response.read(1 << 20):
        pass
    connection.close()
    get_s = time.perf_counter() - started
    started = time.perf_counter()
    subprocess.run(["sh", "-c", f"cat {source} > /dev/null"], check=True)
    cat_s = time.perf_counter() - started
    row("get 256 MiB throughput vs cat", f"{size / get_s / 2**20:.0f} MiB/s",
        f"{size / cat_s / 2**20:.0f} MiB/s", f"{cat_s / get_s:.2f}x")
    row("boxd peak RSS during the 256 MiB put", f"{peak / 1024:.1f} MiB", "", "")
    os.unlink(source)


def main():
    with BenchBoxd() as boxd:
        work = os.path.join(boxd.root, "work")
        row("measure", "boxd", "baseline", "ratio")
        bench_small(boxd, work)
        bench_eight_mib(boxd, work)
        bench_big(boxd, work)


if __name__ == "__main__":
    main()
