"""Small helpers the in-box tests share: results, the host's answers, boxd's
API, PNG pixels."""
import glob
import http.client
import json
import mmap
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import zlib

SOCKET = "/run/boxd/boxd.sock"
RESULTS_TTY = "/dev/ttyS1"
CONTROL_SERIAL = "boxtest-ctl"  # the disk the host answers on (tests/box/run, Control)
CONTROL_BYTES = 4096
powercut_requested = False  # set by a check that wants the plug pulled next
# The host's answer, once this box finds it is a restore of the snapshot a
# check asked for: {"event": "restored", "restore": N, "vmgenid", "entropy",
# "hostMs", "carried"}.
restored = None
# A container image built offline (FROM scratch, busybox-static), once per
# boot: BUILD_IMAGE is the commands, run through boxd's exec.
IMAGE = "boxtest-busybox"
BUILD_IMAGE = r"""set -e
docker image inspect boxtest-busybox >/dev/null 2>&1 && exit 0
d=$(mktemp -d)
cp /bin/busybox "$d/"
printf 'FROM scratch\nCOPY busybox /busybox\nENTRYPOINT ["/busybox"]\n' >"$d/Dockerfile"
docker build -q -t boxtest-busybox "$d"
"""


def emit(line):
    print(line, flush=True)
    fd = os.open(RESULTS_TTY, os.O_WRONLY | os.O_NOCTTY)
    try:
        os.write(fd, (line.replace("\n", " ") + "\n").encode())
    finally:
        os.close(fd)


def figure(name, value):
    """A measured number, shown by the host (not a test)."""
    emit(f"BOXTEST-FIGURE {name} {value}")


def carry(**values):
    """Hands values to every later restore (the host keeps them: its answer
    to a restore has them under "carried")."""
    emit("BOXTEST-CARRY " + json.dumps(values))


def control_device():
    for path in glob.glob("/sys/block/*/serial"):
        with open(path) as f:
            if f.read().strip() == CONTROL_SERIAL:
                return "/dev/" + path.split("/")[3]
    raise AssertionError(f"no control disk (a virtio disk with serial {CONTROL_SERIAL})")


def read_control():
    """The host's last answer. O_DIRECT: the disk is asked, not the page
    cache, which a restore brings back as it was at the snapshot."""
    buffer = mmap.mmap(-1, CONTROL_BYTES)  # page-aligned, as O_DIRECT wants
    fd = os.open(control_device(), os.O_RDONLY | os.O_DIRECT)
    try:
        os.readv(fd, [buffer])
    finally:
        os.close(fd)
    text = bytes(buffer).split(b"\0", 1)[0]
    return json.loads(text) if text.strip() else {"seq": 0}


def ask_host(request, timeout=300):
    """Emits BOXTEST-PAUSE or BOXTEST-SNAPSHOT and waits for the host's
    answer: returns it with the time.monotonic() at which it was seen. The
    timeout is the box's own time, which stands still while QEMU is stopped."""
    before = read_control()["seq"]
    emit(request)
    deadline = time.monotonic() + timeout
    while True:
        answer = read_control()
        if answer["seq"] > before:
            return answer, time.monotonic()
        if time.monotonic() > deadline:
            raise AssertionError(f"no answer from the host to {request} in {timeout} s")
        time.sleep(0.2)


class Connection(http.client.HTTPConnection):
    """HTTP over boxd's unix socket, or over vsock with address=(cid, port)."""

    def __init__(self, address=SOCKET, timeout=60):
        super().__init__("box", timeout=timeout)
        self.address = address

    def connect(self):
        if isinstance(self.address, tuple):
            self.sock = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
        else:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.address)


def request(method, path, body=None, address=SOCKET, timeout=60, headers=None):
    """Returns (status, headers, body bytes); a dict body is sent as JSON."""
    conn = Connection(address, timeout)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def api(method, path, body=None, expect=200, **kw):
    status, _, data = request(method, path, body, **kw)
    if expect is not None and status != expect:
        raise AssertionError(f"{method} {path}: {status} {data[:300]!r}")
    return json.loads(data) if data else None


def health(**kw):
    return api("GET", "/v1/health", **kw)


def run(cmd, timeout=600, **fields):
    """A foreground command through boxd's exec; returns its result."""
    return api("POST", "/v1/exec", {"cmd": cmd, "timeoutSec": timeout, **fields},
               timeout=timeout + 30)


def sh(cmd, timeout=120):
    """A command run by the test itself, not through boxd."""
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=timeout)


def wait_until(what, fn, timeout, interval=0.5):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(interval)


def start_boxd(name, *flags):
    """A second boxd beside the unit's, with dirs of its own: (process, top dir);
    its socket is TOP/run/boxd.sock."""
    top = tempfile.mkdtemp(prefix=f"boxd-{name}.")
    os.makedirs(f"{top}/work")
    sock = f"{top}/run/boxd.sock"
    proc = subprocess.Popen(["/usr/bin/boxd", "--work-dir", f"{top}/work", "--run-dir", f"{top}/run",
                             "--socket", sock, "--cgroup", "off", "--display", ":99", *flags],
                            stdout=subprocess.DEVNULL, stderr=open(f"{top}/stderr", "w"))

    def up():
        assert proc.poll() is None, open(f"{top}/stderr").read()
        try:
            return request("GET", "/v1/health", address=sock, timeout=5)[0] == 200
        except OSError:
            return False
    wait_until(f"boxd {name} up", up, 30)
    return proc, top


def stop_boxd(proc, top):
    proc.terminate()
    proc.wait(timeout=20)
    shutil.rmtree(top, ignore_errors=True)


def unit(name, *props):
    out = subprocess.run(["systemctl", "show", name, "-p", ",".join(props)],
                         capture_output=True, text=True, check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def boxd_main_pid():
    return int(unit("boxd.service", "MainPID")["MainPID"])


def serving_again(old_pid):
    """A new boxd answers health (the unit's MainPID moved on from old_pid)."""
    pid = boxd_main_pid()
    if pid in (0, old_pid):
        return False
    try:
        return health(timeout=5)["ok"]
    except Exception:  # noqa: BLE001 - not up yet
        return False


def boxd_pids():
    """boxd's main pid and the pids of its helper processes (not commands)."""
    main = int(unit("boxd.service", "MainPID")["MainPID"])
    out = sh("ps -e -o pid=,comm=").stdout.split("\n")
    helpers = {int(p): c for p, c in (l.split(None, 1) for l in out if l.strip())
               if c.startswith("boxd")}
    return main, helpers


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return None


def png_pixels(data):
    """Decodes an 8-bit RGB or RGBA PNG: returns (width, height, rows of RGB tuples)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and colour in (2, 6), f"PNG depth {depth} colour {colour}"
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows
