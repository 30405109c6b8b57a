#!/usr/bin/python3
"""Sync and files, side by side with what a user would otherwise run.

  diff warm / cold   POST /v1/sync/diff of a ~17k-file, ~336 MB tree vs a
                     Python script re-reading and SHA-1-ing every file (what
                     the client's comparison through exec does today)
  upload extract     /v1/uploads finish (extraction by boxd-archive) vs tar -xzf
  folder download    GET /v1/files of the tree (tar.gz) vs tar -czf

Generated data stays under bench/out/ (never committed). Files are in the page
cache for both sides (cold = boxd's hash cache empty, not the page cache).
Rows: name | boxd | baseline | ratio (lower is better for boxd)."""
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BUILD = os.environ.get("BOXD_BUILD_DIR", os.path.join(REPO, "build"))
OUT = os.path.join(HERE, "out", "sync")
FILES, TARGET_BYTES = 17_000, 336_000_000

sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
from synclib import manifest_for  # noqa: E402

sys.path.insert(0, HERE)
import benchlib  # noqa: E402




def request(sock, method, path, body=None, headers=None):
    connection = benchlib.UnixHTTP(sock, timeout=600)
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, data


def generate(tree):
    """17k files: many small sources, a few big assets; 70% compressible."""
    marker = os.path.join(tree, ".complete")
    if os.path.exists(marker):
        return
    shutil.rmtree(tree, ignore_errors=True)
    rng = random.Random(1)
    big = 120
    small_bytes = (TARGET_BYTES // 2) // (FILES - big)
    text = (b"function f(x) { return x * 2; } // some source text\n" * 64)
    for i in range(FILES):
        directory = os.path.join(tree, f"pkg{i % 97}", f"mod{i % 13}")
        os.makedirs(directory, exist_ok=True)
        size = (TARGET_BYTES // 2) // big if i < big else rng.randrange(small_bytes // 2, small_bytes * 3 // 2)
        if rng.random() < 0.7:
            data = (text * (size // len(text) + 1))[:size - 16] + os.urandom(8).hex().encode()
        else:
            data = os.urandom(size)
        path = os.path.join(directory, f"f{i}.js")
        with open(path, "wb") as f:
            f.write(data)
        if i % 10 == 0:
            os.chmod(path, 0o755)
    open(marker, "w").close()


def baseline_compare(tree, manifest):
    """What the exec'd comparison script does: read and hash every file."""
    changed = []
    for line in manifest.splitlines():
        digest, hex_path = line.split(b" ")
        path = os.path.join(tree, bytes.fromhex(hex_path.decode()))
        st = os.lstat(path)
        h = hashlib.sha1(b"f:%o:" % (st.st_mode & 0o111))
        with open(path, "rb") as f:
            h.update(f.read())
        if h.hexdigest().encode() != digest:
            changed.append(hex_path)
    return changed


def best(fn, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def row(name, ours, theirs, target=""):
    benchlib.row("sync: " + name, f"{ours:.3f} s", f"{theirs:.3f} s",
                 f"{ours / theirs:.3f}" + (f" (target <= {target})" if target else ""))


def main():
    work = os.path.join(OUT, "work")
    tree = os.path.join(work, "tree")
    os.makedirs(work, exist_ok=True)
    generate(tree)
    run_dir = tempfile.mkdtemp(prefix="bench-sync-run-")
    sock = os.path.join(run_dir, "boxd.sock")
    boxd = subprocess.Popen([os.path.join(BUILD, "boxd", "boxd"), "--work-dir", work,
                             "--run-dir", run_dir, "--socket", sock, "--vsock-port", "off"],
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.02)
        time.sleep(0.1)
        idle = benchlib.status_kib(boxd.pid)
        manifest = manifest_for(tree)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tree) for f in fs)
        shape = f"{len(manifest.splitlines())} files, {size / 1e6:.0f} MB"
        def diff():
            status, body = request(sock, "POST", "/v1/sync/diff?dest=tree", manifest,
                                   {"Content-Type": "text/plain"})
            assert status == 200 and body == b'{"changed":[]}', body[:200]

        def cold():
            cache = os.path.join(run_dir, "hash-cache")
            if os.path.exists(cache):
                os.remove(cache)
            diff()
        # Interleaved, best of each: other work on the machine comes and goes,
        # and should weigh on both sides alike.
        baseline, cold_time, warm_time = [], [], []
        for _ in range(3):
            baseline.append(best(lambda: baseline_compare(os.fsencode(tree), manifest), 1))
            cold_time.append(best(cold, 1))
            time.sleep(0.05)
            warm_time.append(best(diff, 4))
        row(f"diff cold ({shape}) vs py re-read+sha1", min(cold_time), min(baseline), "0.6")
        row("diff warm vs py re-read+sha1", min(warm_time), min(baseline), "0.1")
        time.sleep(0.1)
        peak = benchlib.status_kib(boxd.pid, "VmHWM")
        after = benchlib.status_kib(boxd.pid)
        benchlib.row("sync: boxd RSS idle / after diffs / peak", f"{idle} KiB",
                     f"{after} / {peak} KiB", "")
        if sys.argv[1:] == ["diff"]:
            return

        archive = os.path.join(OUT, "tree.tgz")
        if not os.path.exists(archive):
            subprocess.run(["tar", "-czf", archive, "-C", work, "tree"], check=True)

        def ours_extract():
            shutil.rmtree(os.path.join(work, "up"), ignore_errors=True)
            status, body = request(sock, "POST", "/v1/uploads?dest=up")
            upload_id = body.split(b'"uploadId":"')[1].split(b'"')[0].decode()
            with open(archive, "rb") as f:
                offset = 0
                while True:
                    piece = f.read(32 << 20)
                    if not piece:
                        break
                    request(sock, "PUT", f"/v1/uploads/{upload_id}", piece,
                            {"Upload-Offset": str(offset)})
                    offset += len(piece)
            start = time.perf_counter()
            status, body = request(sock, "POST", f"/v1/uploads/{upload_id}/finish")
            assert status == 200, body
            return time.perf_counter() - start

        def tar_extract():
            target = os.path.join(OUT, "tar-x")
            shutil.rmtree(target, ignore_errors=True)
            os.makedirs(target)
            start = time.perf_counter()
            subprocess.run(["tar", "-xzf", archive, "-C", target], check=True)
            return time.perf_counter() - start
        row("upload extract vs tar -xzf", min(ours_extract() for _ in range(2)), min(tar_extract() for _ in range(2)))
        shutil.rmtree(os.path.join(work, "up"), ignore_errors=True)
        shutil.rmtree(os.path.join(OUT, "tar-x"), ignore_errors=True)

        boxctl = os.path.join(BUILD, "boxd", "ctl", "boxctl")
        devnull = open(os.devnull, "wb")
        ours = best(lambda: subprocess.run([boxctl, "--socket", sock, "get", "tree"],
                                           stdout=devnull, check=True), 2)
        theirs = best(lambda: subprocess.run(["tar", "-czf", "-", "-C", work, "tree"],
                                             stdout=devnull, check=True), 2)
        row("folder download vs tar -czf", ours, theirs)
    finally:
        boxd.terminate()
        boxd.wait()
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
