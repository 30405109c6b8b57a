"""The lock's hand-back: PUT /v1/lock {"locked": false} answers what the person
did (screen, window in front, clipboard, files under the work dir, commands
typed at a terminal). Against what an agent would do otherwise to find out
through POST /v1/exec and a screenshot: a shot, `xdotool getwindowfocus
getwindowname`, `xclip -o` and `find WORK -newer MARK` (and still not know
which commands were typed, nor what was removed). On one Xvfb with two
xterms; the work dir holds 2,000 files in 100 folders, and each round the
"person" writes one file. Medians of alternated rounds.

    BENCH_HANDBACK_ROUNDS=30   rounds per figure (default 30)
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

ROUNDS = int(os.environ.get("BENCH_HANDBACK_ROUNDS", "30"))


def call(conn, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
    response = conn.getresponse()
    payload = response.read()
    return response.status, payload


def fill(work):
    for d in range(100):
        os.makedirs(f"{work}/src/d{d}", exist_ok=True)
        for f in range(20):
            with open(f"{work}/src/d{d}/f{f}.txt", "w") as out:
                out.write("x")


def main():
    x = Xvfb()
    env = x.env()
    procs = [subprocess.Popen(["xterm", "-T", f"bench {i}", "-geometry", f"60x10+{i * 400}+0"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i in range(2)]
    try:
        with BenchBoxd("--display", x.display) as boxd:
            work = os.path.join(boxd.root, "work")
            fill(work)
            conn = UnixHTTP(boxd.socket)
            call(conn, "GET", "/v1/screen/shot")  # the worker up
            time.sleep(1)  # the journal's walk over the new tree
            guess = {"cmd": f"touch {work}/.mark-$$; xdotool getwindowfocus getwindowname; "
                            f"xclip -o -selection clipboard 2>/dev/null; "
                            f"find {work} -newer {work}/.mark-prev -not -path '*/.sbx/*' 2>/dev/null | head -50; "
                            f"mv {work}/.mark-$$ {work}/.mark-prev",
                     "env": {"DISPLAY": x.display}}
            call(conn, "POST", "/v1/exec", guess)
            handback, exec_guess, lock_ms = [], [], []
            for i in range(ROUNDS):
                t = time.perf_counter()
                status, body = call(conn, "PUT", "/v1/lock", {"locked": True})
                lock_ms.append((time.perf_counter() - t) * 1000)
                assert status == 200, body
                with open(f"{work}/src/d{i % 100}/written-{i}.txt", "w") as out:
                    out.write("by the person")
                time.sleep(0.05)
                t = time.perf_counter()
                status, body = call(conn, "PUT", "/v1/lock", {"locked": False})
                handback.append((time.perf_counter() - t) * 1000)
                changes = json.loads(body)["changes"]
                assert status == 200 and len(changes["files"]) == 1, changes
                t = time.perf_counter()
                status, body = call(conn, "GET", "/v1/screen/shot")
                assert status == 200
                status, body = call(conn, "POST", "/v1/exec", guess)
                exec_guess.append((time.perf_counter() - t) * 1000)
                assert status == 200, body
            conn.close()
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        x.kill()
    lock_p50, back_p50, guess_p50 = (statistics.median(v) for v in (lock_ms, handback, exec_guess))
    row("lock p50 (ms): the marks taken", f"{lock_p50:.1f}", "", "")
    row("hand-back answer p50 (ms)", f"{back_p50:.1f}", f"shot + exec guess {guess_p50:.1f}",
        f"{back_p50 / guess_p50:.2f}x")


if __name__ == "__main__":
    main()
