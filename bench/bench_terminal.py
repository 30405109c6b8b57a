#!/usr/bin/python3
"""Terminal benchmarks: a keystroke through boxd's attach, side by side
with the same keystroke through `ssh -tt` to this machine.

Rows: name | boxd | baseline | ratio
  keystroke p50/p95  one byte typed to `stty raw -echo; cat` on a terminal,
                     timed until it comes back: a WebSocket to GET
                     /v1/exec/{id}/attach  vs  ssh -tt to a private sshd on
                     127.0.0.1 (200 rounds each, alternating). Target: 1x.
  shim RSS idle      the shim of a terminal command  vs  of a plain one
  shim RSS 1 MB out  the same after each printed 1 MB

The baseline needs sshd and ssh (packaging/install-deps --bench); without
them the keystroke rows say so and the rest still runs.

    bench/bench_terminal.py [keystroke] [memory]"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import BenchBoxd, UnixHTTP, WebSocketClient, percentile, row, status_kib  # noqa: E402

ROUNDS = 200
ECHO_CMD = "stty raw -echo; echo ready; cat"
SIZE = {"cols": 80, "rows": 24}
SSHD = "/usr/sbin/sshd"


def call(boxd, method, path, body=None):
    import json
    connection = UnixHTTP(boxd.socket)
    connection.request(method, path, body=json.dumps(body) if body else None,
                       headers={"Content-Type": "application/json"})
    answer = connection.getresponse().read()
    connection.close()
    return json.loads(answer) if answer else None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class PrivateSshd:
    """sshd on a free port of 127.0.0.1 with a host key and root's key of
    its own, in a temporary dir; a context manager."""

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="bench-sshd-")
        self.port = free_port()
        host_key, user_key = os.path.join(self.dir, "host"), os.path.join(self.dir, "user")
        for key in (host_key, user_key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
        authorized = os.path.join(self.dir, "authorized_keys")
        shutil.copy(user_key + ".pub", authorized)
        os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation dir
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", "/dev/null", "-p", str(self.port), "-h", host_key,
             "-o", "ListenAddress=127.0.0.1", "-o", f"AuthorizedKeysFile={authorized}",
             "-o", "PermitRootLogin=prohibit-password", "-o", "StrictModes=no",
             "-o", "UsePAM=no", "-o", f"PidFile={self.dir}/pid"],
            stderr=subprocess.DEVNULL)
        self.client = ["ssh", "-tt", "-q", "-p", str(self.port), "-i", user_key,
                       "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                       "-o", "BatchMode=yes", "root@127.0.0.1"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_for_ready(read):
    seen = b""
    while b"ready" not in seen:
        seen += read()


def attach_round(ws):
    start = time.perf_counter()
    ws.send(0x2, b"x")
    while True:
        opcode, payload = ws.recv()
        if opcode == 0x2 and b"x" in payload:
            return time.perf_counter() - start


def ssh_round(proc):
    start = time.perf_counter()
    os.write(proc.stdin.fileno(), b"x")
    while b"x" not in os.read(proc.stdout.fileno(), 4096):
        pass
    return time.perf_counter() - start


def keystroke():
    if not shutil.which("ssh") or not os.path.exists(SSHD):
        row("keystroke p50/p95 (µs)", "-", "no sshd/ssh", "install-deps --bench")
        return
    with BenchBoxd() as boxd, PrivateSshd() as sshd:
        started = call(boxd, "POST", "/v1/exec", {"cmd": ECHO_CMD, "background": True,
                                                  "pty": SIZE, "timeoutSec": 600})
        ws = WebSocketClient(boxd.socket, f"/v1/exec/{started['bgId']}/attach")
        wait_for_ready(lambda: ws.recv()[1])
        ssh = subprocess.Popen([*sshd.client, ECHO_CMD], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        wait_for_ready(lambda: os.read(ssh.stdout.fileno(), 4096))
        attach_times, ssh_times = [], []
        for _ in range(ROUNDS):
            attach_times.append(attach_round(ws))
            ssh_times.append(ssh_round(ssh))
        ws.close()
        ssh.kill()
        ssh.wait()
        call(boxd, "POST", f"/v1/procs/{started['bgId']}/stop", {"signal": "SIGKILL"})
    for name, p in (("p50", 50), ("p95", 95)):
        a, s = percentile(attach_times, p) * 1e6, percentile(ssh_times, p) * 1e6
        row(f"keystroke {name} (µs, {ROUNDS} rounds)", f"{a:.0f}", f"{s:.0f}",
            f"{a / s:.2f}x (target <= 1x)")


def shim_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def memory():
    # A command that waits for a line on stdin, prints 1 MB, then sleeps:
    # the shim's RSS idle, then after the output went through it.
    cmd = "read go; head -c 1000000 /dev/zero | tr '\\0' x; echo; sleep 600"
    with BenchBoxd() as boxd:
        ids, shims = {}, {}
        for kind, extra in (("pty", {"pty": SIZE}), ("plain", {"stdin": {"stream": True}})):
            started = call(boxd, "POST", "/v1/exec", {"cmd": cmd, "background": True, **extra})
            ids[kind] = started["bgId"]
            shims[kind] = shim_of(started["pid"])
        time.sleep(0.5)
        idle = {kind: status_kib(pid) for kind, pid in shims.items()}
        for kind, exec_id in ids.items():
            connection = UnixHTTP(boxd.socket)
            connection.request("POST", f"/v1/exec/{exec_id}/stdin", body=b"go\n",
                               headers={"Content-Type": "application/octet-stream"})
            connection.getresponse().read()
            connection.close()
        time.sleep(2)
        after = {kind: status_kib(pid) for kind, pid in shims.items()}
        for exec_id in ids.values():
            call(boxd, "POST", f"/v1/procs/{exec_id}/stop", {"signal": "SIGKILL"})
    row("shim RSS idle (KiB): pty vs plain", str(idle["pty"]), str(idle["plain"]),
        f"{idle['pty'] / max(idle['plain'], 1):.2f}x")
    row("shim RSS after 1 MB out (KiB): pty vs plain", str(after["pty"]), str(after["plain"]),
        f"{after['pty'] / max(after['plain'], 1):.2f}x")


def main():
    parts = sys.argv[1:] or ["keystroke", "memory"]
    if "keystroke" in parts:
        keystroke()
    if "memory" in parts:
        memory()


if __name__ == "__main__":
    main()
