"""Screen figures, side by side on one 1280x800 Xvfb showing a page-like
picture (tests/screen-pattern) and a terminal with text:
- a PNG screenshot through the API against scrot, ImageMagick's import and
  a one-frame ffmpeg x11grab (each a process, as a user would run it): on a
  changing screen (a square moving, as screen-pattern --animate draws it;
  only shots that were encoded count), with every strip encoded, and on an
  unchanged screen (served from the last encoding);
- the PNG's size against scrot's file;
- the first shot after boxd starts (the worker started ahead), the first
  after the worker left when idle, and the worker's RSS busy and idle;
- 10,000 screenshots and the X server's connection count before and after;
- recording at 30 fps, a still page and a moving square, each on a quiet
  machine and beside a busy loop on every core: CPU against ffmpeg x11grab
  + libx264 ultrafast, dropped frames; health latency while it runs."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import BUILD_DIR, BenchBoxd, burners, row, status_kib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from live_helpers import cpu_seconds  # noqa: E402
from screen_helpers import Xvfb, children_named  # noqa: E402

LATENCY = os.path.join(BUILD_DIR, "bench", "latency")
PATTERN = os.path.join(BUILD_DIR, "tests", "screen-pattern")
SHOTS_FOR_LEAK_CHECK = 10000
RECORD_SECONDS = 10


def latency(*args):
    out = subprocess.run([LATENCY, *args], capture_output=True, text=True, check=True).stdout
    return [float(x) for x in out.split()]


def read_ok_answer(connection, pending=b""):
    """Reads one 200 answer with a Content-Length from `connection`, which
    may have begun in `pending`: (head, what followed the body)."""
    while b"\r\n\r\n" not in pending:
        pending += connection.recv(65536)
    head, pending = pending.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200"), head
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(pending) < length:
        pending += connection.recv(1 << 20)
    return head, pending[length:]


def shot_samples(socket_path, path, count, want=None, limit=5000):
    """(milliseconds, cached) per GET on one kept-alive connection (bench/
    latency reads answers of at most 64 KiB; screenshots are larger).
    `want`: keep only encoded (False) or cached (True) shots, up to `count`."""
    import socket as sockets
    connection = sockets.socket(sockets.AF_UNIX)
    connection.connect(socket_path)
    request = f"GET {path} HTTP/1.1\r\nHost: boxd\r\n\r\n".encode()
    samples, pending = [], b""
    for _ in range(limit):
        if len(samples) >= count:
            break
        start = time.perf_counter()
        connection.sendall(request)
        head, pending = read_ok_answer(connection, pending)
        elapsed = (time.perf_counter() - start) * 1000
        cached = b"x-cached: 1" in head.lower()
        if want is None or cached == want:
            samples.append(elapsed)
    connection.close()
    return samples


def shot_times(socket_path, path, count, want=None):
    return statistics.median(shot_samples(socket_path, path, count, want))


def timed_runs(argv, env, count=9):
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, capture_output=True)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def curl_shot(socket_path, query, out):
    subprocess.run(["curl", "-s", "-f", "--unix-socket", socket_path, "-o", out,
                    f"http://boxd/v1/screen/shot{query}"], check=True)


def shots(boxd, x, env, tmp):
    curl_shot(boxd.socket, "", os.path.join(tmp, "warm.png"))
    scrot_png = os.path.join(tmp, "scrot.png")
    scrot = timed_runs(["scrot", "-o", scrot_png], env)
    magick = timed_runs(["import", "-window", "root", os.path.join(tmp, "import.png")], env, 5)
    ffmpeg = timed_runs(["ffmpeg", "-y", "-loglevel", "error", "-f", "x11grab", "-video_size", "1280x800",
                         "-i", x.display, "-frames:v", "1", os.path.join(tmp, "ffmpeg.png")], env, 5)
    mover = subprocess.Popen([PATTERN, "--animate", "100"], env=env, stdout=subprocess.PIPE)
    mover.stdout.readline()
    try:
        changing = shot_times(boxd.socket, "/v1/screen/shot", 100, want=False)
        half = shot_times(boxd.socket, "/v1/screen/shot?scale=0.5", 50, want=False)
        jpeg = shot_times(boxd.socket, "/v1/screen/shot?format=jpeg&quality=80", 50, want=False)
    finally:
        mover.kill()
        mover.wait()
    time.sleep(0.3)
    # Alternating x=0 and x=1 (1279 wide): every row shifts, no strip is reused.
    whole = statistics.median(shot_samples(boxd.socket, "/v1/screen/shot?x=0&w=1279", 1)
                              + [shot_samples(boxd.socket, f"/v1/screen/shot?x={i % 2}&w=1279", 1)[0]
                                 for i in range(1, 60)])
    unchanged = shot_times(boxd.socket, "/v1/screen/shot", 200, want=True)
    api_png = os.path.join(tmp, "api.png")
    curl_shot(boxd.socket, "?cursor=0", api_png)
    row("PNG shot, changing screen p50 (ms)", f"{changing:.1f}", f"scrot {scrot:.1f}",
        f"{scrot / changing:.1f}x faster (target >= 5x)")
    row("PNG shot, every strip encoded p50 (ms)", f"{whole:.1f}", f"scrot {scrot:.1f}",
        f"{scrot / whole:.1f}x faster")
    row("PNG shot, unchanged screen p50 (ms)", f"{unchanged:.2f}", f"scrot {scrot:.1f}",
        f"{scrot / unchanged:.0f}x faster (target >= 20x)")
    row("PNG shot vs import (ms)", f"{changing:.1f}", f"import {magick:.1f}",
        f"{magick / changing:.1f}x faster")
    row("PNG shot vs ffmpeg x11grab 1 frame (ms)", f"{changing:.1f}", f"ffmpeg {ffmpeg:.1f}",
        f"{ffmpeg / changing:.1f}x faster")
    api_size, scrot_size = os.path.getsize(api_png), os.path.getsize(scrot_png)
    row("PNG size (KiB)", f"{api_size / 1024:.1f}", f"scrot {scrot_size / 1024:.1f}",
        f"{api_size / scrot_size:.2f} (target <= 1.00)")
    row("shot scale=0.5 / JPEG q80, changing p50 (ms)", f"{half:.1f} / {jpeg:.1f}", "", "encoded")
    # Every strip encoded again and again, for the worker's busy RSS.
    for i in range(40):
        shot_samples(boxd.socket, f"/v1/screen/shot?x={i % 2}&w=1279", 1)
    worker = children_named(boxd.proc.pid, "boxd-screen")[0]
    row("worker RSS after shots (MiB)", f"{status_kib(worker) / 1024:.1f}", "", "PNG, JPEG and scaled shots taken")


def first_shot_ms(boxd):
    import socket as sockets
    start = time.perf_counter()
    connection = sockets.socket(sockets.AF_UNIX)
    connection.connect(boxd.socket)
    connection.sendall(b"GET /v1/screen/shot HTTP/1.1\r\nHost: boxd\r\n\r\n")
    read_ok_answer(connection)
    connection.close()
    return (time.perf_counter() - start) * 1000


def lifecycle(x):
    """The first shot as soon as boxd answers (the worker started ahead), and
    after the worker left for being idle (started on demand); its RSS."""
    firsts = []
    for _ in range(7):
        with BenchBoxd("--display", x.display) as boxd:
            firsts.append(first_shot_ms(boxd))
    row("first shot after boxd is up p50 (ms)", f"{statistics.median(firsts):.1f}", "",
        f"min {min(firsts):.1f}, max {max(firsts):.1f} (target <= 30)")
    with BenchBoxd("--display", x.display, "--screen-idle", "2") as boxd:
        first_shot_ms(boxd)
        worker = children_named(boxd.proc.pid, "boxd-screen")[0]
        busy = status_kib(worker)
        time.sleep(1)
        idle = status_kib(worker)
        deadline = time.monotonic() + 10
        while children_named(boxd.proc.pid, "boxd-screen") and time.monotonic() < deadline:
            time.sleep(0.05)
        gone = not children_named(boxd.proc.pid, "boxd-screen")
        row("worker RSS after a shot / 1 s idle (MiB)", f"{busy / 1024:.1f} / {idle / 1024:.1f}", "",
            "before it exits")
        row("worker after the idle time (--screen-idle)", "exited" if gone else "STILL THERE", "",
            "0 MiB (target <= 4 MiB)")
        cold = []
        for _ in range(5):
            cold.append(first_shot_ms(boxd))
            deadline = time.monotonic() + 10
            while children_named(boxd.proc.pid, "boxd-screen") and time.monotonic() < deadline:
                time.sleep(0.05)
        row("first shot after an idle exit p50 (ms)", f"{statistics.median(cold):.1f}", "",
            "worker started on demand, nothing warm")


def connection_count(x):
    return Xvfb.client_count(x)


def many_shots(boxd, x):
    before = connection_count(x)
    start = time.perf_counter()
    # A small region: the whole screen is grabbed each time, the encoding is tiny.
    latency("http", boxd.socket, "/v1/screen/shot?x=0&y=0&w=16&h=16", str(SHOTS_FOR_LEAK_CHECK))
    seconds = time.perf_counter() - start
    after = connection_count(x)
    row(f"X connections after {SHOTS_FOR_LEAK_CHECK} shots", f"{before} -> {after}", "",
        f"{'unchanged' if before == after else 'CHANGED'} ({seconds:.0f} s)")


def curl_json(boxd, path, body=None):
    argv = ["curl", "-s", "--unix-socket", boxd.socket, "-X", "POST"]
    if body is not None:
        argv += ["-d", json.dumps(body)]
    return json.loads(subprocess.run(argv + [f"http://boxd{path}"], capture_output=True, text=True,
                                     check=True).stdout)


def record_with_boxd(boxd, seconds):
    """CPU (fraction of a core: the worker and boxd) of a 30 fps recording
    over `seconds`, nothing else asking boxd anything; the stop's answer."""
    answer = curl_json(boxd, "/v1/screen/record/start", {"fps": 30})
    assert "recordingId" in answer, answer
    worker = children_named(boxd.proc.pid, "boxd-screen")[0]
    time.sleep(1)
    used = cpu_seconds(worker) + cpu_seconds(boxd.proc.pid)
    start = time.perf_counter()
    time.sleep(seconds)
    cpu = (cpu_seconds(worker) + cpu_seconds(boxd.proc.pid) - used) / (time.perf_counter() - start)
    return cpu, curl_json(boxd, "/v1/screen/record/stop")


def record_with_ffmpeg(x, env, tmp, seconds):
    ffmpeg = subprocess.Popen(["ffmpeg", "-y", "-loglevel", "error", "-f", "x11grab", "-framerate", "30",
                               "-video_size", "1280x800", "-i", x.display, "-c:v", "libx264", "-preset",
                               "ultrafast", "-t", str(seconds + 3), os.path.join(tmp, "ff.mp4")], env=env)
    time.sleep(1.5)
    used = cpu_seconds(ffmpeg.pid)
    start = time.perf_counter()
    time.sleep(seconds)
    cpu = (cpu_seconds(ffmpeg.pid) - used) / (time.perf_counter() - start)
    ffmpeg.kill()
    ffmpeg.wait()
    return cpu


def recording_rows(name, ours, theirs, stopped):
    row(f"record 30 fps, {name}: CPU (% of a core)", f"{ours * 100:.1f}", f"ffmpeg {theirs * 100:.1f}",
        f"{ours / theirs:.2f} (target <= 0.25)")
    row(f"record, {name}: dropped frames", f"{stopped['droppedFrames']}", "",
        f"of {round(stopped['durationMs'] * 30 / 1000)} slots; {stopped['frames']} coded, "
        f"{stopped['bytes'] / 1024:.0f} KiB (target 0)")


def recording(boxd, x, env, tmp):
    """A still page, a moving square (screen-pattern --animate 30 beside the
    page), each quiet and beside a busy loop on every core; then health's
    latency while a recording runs."""
    for moving in (False, True):
        mover = None
        if moving:
            mover = subprocess.Popen([PATTERN, "--animate", "30"], env=env, stdout=subprocess.PIPE)
            mover.stdout.readline()
        try:
            for loaded in (False, True):
                load = burners() if loaded else []
                try:
                    ours, stopped = record_with_boxd(boxd, RECORD_SECONDS)
                    theirs = record_with_ffmpeg(x, env, tmp, RECORD_SECONDS)
                finally:
                    for burner in load:
                        burner.kill()
                        burner.wait()
                name = ("moving square" if moving else "still page") + (", busy cores" if loaded else "")
                recording_rows(name, ours, theirs, stopped)
        finally:
            if mover:
                mover.kill()
                mover.wait()
    idle = latency("http", boxd.socket, "/v1/health", "3000")
    curl_json(boxd, "/v1/screen/record/start", {"fps": 30})
    time.sleep(1)
    busy = latency("http", boxd.socket, "/v1/health", "3000")
    curl_json(boxd, "/v1/screen/record/stop")
    row("health p50/p99 while recording (us)", f"{busy[0]:.0f}/{busy[2]:.0f}",
        f"idle {idle[0]:.0f}/{idle[2]:.0f}", f"{busy[0] / idle[0]:.2f}x p50")


def main():
    x = Xvfb()
    env = x.env()
    clients = [subprocess.Popen([PATTERN], env=env, stdout=subprocess.PIPE)]
    clients[0].stdout.readline()
    clients.append(subprocess.Popen(["xterm", "-geometry", "80x24+600+450", "-e", "sh", "-c",
                                     "ls -la /usr/bin | head -30; sleep 1000"], env=env))
    time.sleep(1.5)
    tmp = tempfile.mkdtemp(prefix="bench-screen-")
    try:
        with BenchBoxd("--display", x.display) as boxd:
            parts = sys.argv[1:] or ["shots", "life", "many", "record"]
            if "life" in parts:
                lifecycle(x)
            if "shots" in parts:
                shots(boxd, x, env, tmp)
            if "many" in parts:
                many_shots(boxd, x)
            if "record" in parts:
                recording(boxd, x, env, tmp)
    finally:
        for client in clients:
            client.kill()
        x.kill()
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
