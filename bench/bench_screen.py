"""Screen figures, side by side on one 1280x800 Xvfb showing a page-like
picture (tests/screen-pattern) and a terminal with text:
- a PNG screenshot through the API against scrot, ImageMagick's import and
  a one-frame ffmpeg x11grab (each a process, as a user would run it);
- the PNG's size against scrot's file;
- 10,000 screenshots and the X server's connection count before and after;
- recording at 30 fps: CPU against ffmpeg x11grab + libx264 ultrafast,
  dropped frames, and health latency while it runs (exec is not in this
  build; health shows the same event loop)."""
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import BUILD_DIR, BenchBoxd, row

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from screen_helpers import Xvfb  # noqa: E402

LATENCY = os.path.join(BUILD_DIR, "bench", "latency")
PATTERN = os.path.join(BUILD_DIR, "tests", "screen-pattern")
SHOTS_FOR_LEAK_CHECK = 10000
RECORD_SECONDS = 10


def latency(*args):
    out = subprocess.run([LATENCY, *args], capture_output=True, text=True, check=True).stdout
    return [float(x) for x in out.split()]


def shot_times(socket_path, path, count):
    """Milliseconds per GET on one kept-alive connection (bench/latency
    reads answers of at most 64 KiB; screenshots are larger)."""
    import socket as sockets
    connection = sockets.socket(sockets.AF_UNIX)
    connection.connect(socket_path)
    request = f"GET {path} HTTP/1.1\r\nHost: boxd\r\n\r\n".encode()
    samples, pending = [], b""
    for _ in range(count):
        start = time.perf_counter()
        connection.sendall(request)
        while b"\r\n\r\n" not in pending:
            pending += connection.recv(65536)
        head, pending = pending.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 200"), head
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        while len(pending) < length:
            pending += connection.recv(1 << 20)
        pending = pending[length:]
        samples.append((time.perf_counter() - start) * 1000)
    connection.close()
    return statistics.median(samples)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_named(parent, name):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if int(fields[1]) == parent and comm == name:
            found.append(int(pid))
    return found


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
    curl_shot(boxd.socket, "", os.path.join(tmp, "warm.png"))  # starts the worker
    api = shot_times(boxd.socket, "/v1/screen/shot", 100)
    api_png = os.path.join(tmp, "api.png")
    curl_shot(boxd.socket, "", api_png)
    scrot_png = os.path.join(tmp, "scrot.png")
    scrot = timed_runs(["scrot", "-o", scrot_png], env)
    magick = timed_runs(["import", "-window", "root", os.path.join(tmp, "import.png")], env, 5)
    ffmpeg = timed_runs(["ffmpeg", "-y", "-loglevel", "error", "-f", "x11grab", "-video_size", "1280x800",
                         "-i", x.display, "-frames:v", "1", os.path.join(tmp, "ffmpeg.png")], env, 5)
    row("PNG shot 1280x800 p50 (ms)", f"{api:.1f}", f"scrot {scrot:.1f}",
        f"{scrot / (api):.1f}x faster (target >= 4x)")
    row("PNG shot vs import (ms)", f"{api:.1f}", f"import {magick:.1f}",
        f"{magick / (api):.1f}x faster")
    row("PNG shot vs ffmpeg x11grab 1 frame (ms)", f"{api:.1f}", f"ffmpeg {ffmpeg:.1f}",
        f"{ffmpeg / (api):.1f}x faster")
    api_size, scrot_size = os.path.getsize(api_png), os.path.getsize(scrot_png)
    row("PNG size (KiB)", f"{api_size / 1024:.1f}", f"scrot {scrot_size / 1024:.1f}",
        f"{api_size / scrot_size:.2f} (target <= 1.00)")
    half = shot_times(boxd.socket, "/v1/screen/shot?scale=0.5", 50)
    jpeg = shot_times(boxd.socket, "/v1/screen/shot?format=jpeg&quality=80", 50)
    row("shot scale=0.5 / JPEG q80 p50 (ms)", f"{half:.1f} / {jpeg:.1f}", "", "")


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


def recording(boxd, x, env, tmp):
    idle = latency("http", boxd.socket, "/v1/health", "3000")
    answer = subprocess.run(["curl", "-s", "--unix-socket", boxd.socket, "-X", "POST", "-d", '{"fps":30}',
                             "http://boxd/v1/screen/record/start"], capture_output=True, text=True).stdout
    assert "recordingId" in answer, answer
    worker = children_named(boxd.proc.pid, "boxd-screen")[0]
    time.sleep(1)
    used = cpu_seconds(worker) + cpu_seconds(boxd.proc.pid)
    start = time.perf_counter()
    busy = latency("http", boxd.socket, "/v1/health", "3000")
    time.sleep(max(0.0, RECORD_SECONDS - (time.perf_counter() - start)))
    ours = (cpu_seconds(worker) + cpu_seconds(boxd.proc.pid) - used) / (time.perf_counter() - start)
    stopped = subprocess.run(["curl", "-s", "--unix-socket", boxd.socket, "-X", "POST",
                              "http://boxd/v1/screen/record/stop"], capture_output=True, text=True).stdout
    import json
    stopped = json.loads(stopped)

    ffmpeg = subprocess.Popen(["ffmpeg", "-y", "-loglevel", "error", "-f", "x11grab", "-framerate", "30",
                               "-video_size", "1280x800", "-i", x.display, "-c:v", "libx264", "-preset",
                               "ultrafast", "-t", str(RECORD_SECONDS + 3), os.path.join(tmp, "ff.mp4")], env=env)
    time.sleep(1.5)
    used = cpu_seconds(ffmpeg.pid)
    start = time.perf_counter()
    time.sleep(RECORD_SECONDS)
    theirs = (cpu_seconds(ffmpeg.pid) - used) / (time.perf_counter() - start)
    ffmpeg.kill()
    ffmpeg.wait()
    row("record 30 fps, still page: CPU (% of a core)", f"{ours * 100:.1f}", f"ffmpeg {theirs * 100:.1f}",
        f"{ours / theirs:.2f} (target <= 0.50)")
    row("record: dropped frames", f"{stopped['droppedFrames']}", "",
        f"of {round(stopped['durationMs'] * 30 / 1000)} slots; {stopped['frames']} coded, "
        f"{stopped['bytes'] / 1024:.0f} KiB")
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
            parts = sys.argv[1:] or ["shots", "many", "record"]
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
