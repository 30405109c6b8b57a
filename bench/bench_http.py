"""The HTTP layer under load: boxd's memory while large request bodies stream
in, upload throughput against tar reading the same bytes from a pipe, and
many clients at once, busy or idle.

    BENCH_UPLOAD_MIB=1024   size of the single-request upload (default 1024)
"""
import http.client
import json
import os
import socket
import subprocess
import tempfile
import threading
import time

from benchlib import BenchBoxd, percentile, row, status_kib

UPLOAD_MIB = int(os.environ.get("BENCH_UPLOAD_MIB", "1024"))
CACHE = os.environ.get("BOXD_BENCH_CACHE", "/var/tmp/boxd-bench")


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=600):
        super().__init__("boxd", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def make_archive(mib):
    """A tar.gz of about `mib` MiB of incompressible files, made once and kept."""
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"upload-{mib}.tar.gz")
    if os.path.exists(path):
        return path
    with tempfile.TemporaryDirectory(dir=CACHE) as tree:
        files = max(1, mib // 16)
        for i in range(files):
            with open(os.path.join(tree, f"part-{i:04d}.bin"), "wb") as f:
                for _ in range(16):
                    f.write(os.urandom(1 << 20))
        subprocess.run(f"tar -C {tree} -cf - . | gzip -1 > {path}.part", shell=True, check=True)
    os.rename(path + ".part", path)
    return path


def upload(socket_path, archive, dest):
    """POST /v1/sync/upload with the file streamed as the body; returns
    (status, answer, seconds)."""
    conn = UnixConnection(socket_path)
    size = os.path.getsize(archive)
    start = time.perf_counter()
    with open(archive, "rb") as body:
        try:
            conn.request("POST", f"/v1/sync/upload?dest={dest}", body=body,
                         headers={"Content-Type": "application/gzip", "Content-Length": str(size)})
        except OSError:
            pass  # refused before the end of the body: its answer may still be readable
        try:
            response = conn.getresponse()
            status, answer = response.status, response.read()
        except (OSError, http.client.HTTPException) as error:
            status, answer = 0, f"{type(error).__name__}: {error}".encode()
    took = time.perf_counter() - start
    conn.close()
    return status, answer, took


def tar_from_pipe(archive, dest):
    os.makedirs(dest, exist_ok=True)
    start = time.perf_counter()
    subprocess.run(f"cat {archive} | tar -xzf - -C {dest}", shell=True, check=True)
    return time.perf_counter() - start


def outcome(status, answer):
    if status == 200:
        return "ok"
    try:
        return f"{status} {json.loads(answer)['error']['code']}"
    except (ValueError, KeyError, TypeError):
        return f"{status} {answer[:40]!r}"


def single_upload():
    archive = make_archive(UPLOAD_MIB)
    mib = os.path.getsize(archive) / (1 << 20)
    with BenchBoxd() as boxd:
        idle = status_kib(boxd.proc.pid, "VmRSS")
        status, answer, took = upload(boxd.socket, archive, "big")
        peak = status_kib(boxd.proc.pid, "VmHWM")
        work = os.path.dirname(os.path.dirname(boxd.socket)) + "/work"
        theirs = tar_from_pipe(archive, os.path.join(work, "tar-baseline"))
    row(f"upload {mib:.0f} MiB in one request: boxd peak", f"{peak} KiB", f"idle {idle} KiB",
        f"{outcome(status, answer)} (target peak < 8 MiB)")
    if status == 200:
        row(f"upload {mib:.0f} MiB: extract rate (MiB/s)", f"{mib / took:.0f}",
            f"tar {mib / theirs:.0f}", f"{theirs / took:.2f}x of tar's speed (target >= 1x)")


def concurrent_uploads(count=8, mib=64):
    archive = make_archive(mib)
    with BenchBoxd() as boxd:
        results = [None] * count

        def one(i):
            results[i] = upload(boxd.socket, archive, f"c{i}")

        threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.perf_counter() - start
        peak = status_kib(boxd.proc.pid, "VmHWM")
    outcomes = sorted({outcome(s, a) for s, a, _ in results})
    row(f"{count} concurrent {mib} MiB uploads: boxd peak", f"{peak} KiB", f"{took:.1f} s",
        ", ".join(outcomes))


def many_clients(count=500):
    with BenchBoxd() as boxd:
        latencies, failures = [], []
        lock = threading.Lock()
        barrier = threading.Barrier(count)

        def one():
            conn = UnixConnection(boxd.socket, timeout=30)
            try:
                conn.connect()
                barrier.wait()
                start = time.perf_counter()
                conn.request("GET", "/v1/health")
                response = conn.getresponse()
                response.read()
                with lock:
                    (latencies if response.status == 200 else failures).append(
                        (time.perf_counter() - start) * 1000 if response.status == 200 else response.status)
            except Exception as error:  # noqa: BLE001 - counted
                with lock:
                    failures.append(type(error).__name__)
            finally:
                conn.close()

        threads = [threading.Thread(target=one) for _ in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        peak = status_kib(boxd.proc.pid, "VmHWM")
    p50 = percentile(latencies, 50) if latencies else float("nan")
    p99 = percentile(latencies, 99) if latencies else float("nan")
    row(f"{count} clients at once: health p50/p99 (ms)", f"{p50:.1f}/{p99:.1f}",
        f"peak {peak} KiB", f"{len(latencies)} answered, {len(failures)} failed")


def idle_connections(count=10000):
    with BenchBoxd() as boxd:
        before = status_kib(boxd.proc.pid, "VmRSS")
        socks, refused = [], 0
        for _ in range(count):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(boxd.socket)
                socks.append(s)
            except OSError:
                refused += 1
                s.close()
        time.sleep(1)
        start = time.perf_counter()
        conn = UnixConnection(boxd.socket, timeout=30)
        try:
            conn.request("GET", "/v1/health")
            response = conn.getresponse()
            response.read()
            answered = f"health {response.status} in {(time.perf_counter() - start) * 1000:.1f} ms"
        except Exception as error:  # noqa: BLE001 - reported
            answered = f"health failed: {type(error).__name__}"
        conn.close()
        rss = status_kib(boxd.proc.pid, "VmRSS")
        # What boxd did with them: kept open, or answered (503) and closed.
        closed = 0
        for s in socks:
            s.setblocking(False)
            try:
                if s.recv(1, socket.MSG_PEEK) is not None:
                    closed += 1
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
            s.close()
    row(f"{count} idle connections: boxd RSS", f"{rss} KiB", f"before {before} KiB",
        f"{answered}; {closed} answered and closed by boxd, {refused} refused at connect")


def main():
    single_upload()
    concurrent_uploads()
    many_clients()
    idle_connections()


if __name__ == "__main__":
    main()
