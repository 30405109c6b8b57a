"""Live screen figures on one 1280x800 Xvfb showing a page-like picture
(tests/screen-pattern), against the pipeline a user would otherwise run:
`ffmpeg -f x11grab -framerate 30 ... -c:v libx264 -preset ultrafast -tune
zerolatency -f mp4 -movflags frag_keyframe+empty_moov pipe:1`.
- CPU of a still screen and of a moving one (a 40x40 square moving at
  30 fps, tests/screen-pattern --animate 30), boxd + its worker against
  ffmpeg, one viewer reading;
- change-to-bytes latency: the whole screen changes colour (screen-pattern
  --fill says when the X server has drawn it) and the time until the
  fragment holding the new picture has arrived at the viewer's socket,
  p50 and p99 over many changes at irregular moments."""
import os
import random
import subprocess
import sys
import time

from benchlib import BUILD_DIR, BenchBoxd, percentile, row

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
from live_helpers import Filler, LiveViewer, cpu_seconds, decoded_colours, near  # noqa: E402
from screen_helpers import Xvfb, children_named  # noqa: E402

PATTERN = os.path.join(BUILD_DIR, "tests", "screen-pattern")
SECONDS = 10
CHANGES = 60
SPOT = (100, 100)


def boxd_cpu(boxd):
    """CPU share of a core used by boxd and its worker while one viewer reads."""
    viewer = LiveViewer(boxd.socket, "")
    viewer.wait_fragments(1)
    time.sleep(1)
    worker = children_named(boxd.proc.pid, "boxd-screen")[0]
    used = cpu_seconds(worker) + cpu_seconds(boxd.proc.pid)
    start = time.perf_counter()
    sent = len(viewer.data)
    time.sleep(SECONDS)
    share = (cpu_seconds(worker) + cpu_seconds(boxd.proc.pid) - used) / (time.perf_counter() - start)
    kib = (len(viewer.data) - sent) / 1024
    viewer.close()
    time.sleep(0.5)
    return share, kib


def ffmpeg_cpu(x, env):
    ffmpeg = subprocess.Popen(
        ["ffmpeg", "-loglevel", "error", "-f", "x11grab", "-framerate", "30", "-video_size", "1280x800",
         "-i", x.display, "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency",
         "-f", "mp4", "-movflags", "frag_keyframe+empty_moov", "pipe:1"],
        env=env, stdout=subprocess.PIPE)
    read = [0]

    def drain():
        while True:
            chunk = ffmpeg.stdout.read1(1 << 16)
            if not chunk:
                return
            read[0] += len(chunk)

    import threading
    threading.Thread(target=drain, daemon=True).start()
    time.sleep(1.5)
    used, sent = cpu_seconds(ffmpeg.pid), read[0]
    start = time.perf_counter()
    time.sleep(SECONDS)
    share = (cpu_seconds(ffmpeg.pid) - used) / (time.perf_counter() - start)
    kib = (read[0] - sent) / 1024
    ffmpeg.kill()
    ffmpeg.wait()
    return share, kib


def cpu(boxd, x, env, moving):
    animation = None
    if moving:
        animation = subprocess.Popen([PATTERN, "--animate", "30"], env=env, stdout=subprocess.PIPE)
        animation.stdout.readline()
    try:
        ours, our_kib = boxd_cpu(boxd)
        theirs, their_kib = ffmpeg_cpu(x, env)
    finally:
        if animation:
            animation.kill()
            animation.wait()
    what = "moving square" if moving else "still page"
    row(f"live 30 fps, {what}: CPU (% of a core)", f"{ours * 100:.2f}", f"ffmpeg {theirs * 100:.1f}",
        f"{ours / theirs:.3f}")
    row(f"live 30 fps, {what}: KiB sent in {SECONDS} s", f"{our_kib:.0f}", f"ffmpeg {their_kib:.0f}",
        f"{our_kib / their_kib:.3f}" if their_kib else "-")


def latency(boxd, env):
    filler = Filler(PATTERN, env)
    viewer = LiveViewer(boxd.socket, "")
    viewer.wait_fragments(1)
    rng = random.Random(7)
    changes = []
    try:
        for i in range(CHANGES):
            time.sleep(rng.uniform(0.08, 0.4))
            colour = ((i * 67) % 256, (i * 151 + 90) % 256, (255 - i * 37) % 256)
            changes.append((filler.fill(colour), colour))
        time.sleep(0.5)
        path = viewer.snapshot(os.path.join(boxd.root, "latency.mp4"))
        frames = decoded_colours(path, *SPOT)
    finally:
        viewer.close()
        filler.close()
    start = viewer.started_at()
    to_bytes, to_frame = [], []
    for changed_at, colour in changes:
        shown = [p for p, c in frames if start + p >= changed_at - 50 and near(c, colour, 24)]
        if not shown:
            continue
        pts = min(shown)
        arrived = next(a * 1000 for a, p, _, _ in viewer.fragments if abs(p - pts) < 0.5)
        to_bytes.append(arrived - changed_at)
        to_frame.append(start + pts - changed_at)
    row("live: change to bytes at the viewer p50/p99 (ms)",
        f"{percentile(to_bytes, 50):.0f}/{percentile(to_bytes, 99):.0f}", "",
        f"{len(to_bytes)} of {CHANGES} changes; target <= 100")
    row("live: change to frame timestamp p50/p99 (ms)",
        f"{percentile(to_frame, 50):.0f}/{percentile(to_frame, 99):.0f}", "",
        "grab moment, by the stream's own clock")


def main():
    x = Xvfb()
    env = x.env()
    page = subprocess.Popen([PATTERN], env=env, stdout=subprocess.PIPE)
    page.stdout.readline()
    try:
        with BenchBoxd("--display", x.display) as boxd:
            parts = sys.argv[1:] or ["still", "moving", "latency"]
            if "still" in parts:
                cpu(boxd, x, env, moving=False)
            if "moving" in parts:
                cpu(boxd, x, env, moving=True)
            if "latency" in parts:
                latency(boxd, env)
    finally:
        page.kill()
        x.kill()


if __name__ == "__main__":
    main()
