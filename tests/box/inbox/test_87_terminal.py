"""Terminals in the booted box: a bash on a pseudo-terminal, attached over
vsock (the control plane's way in), outlives a SIGKILL of boxd under
systemd; the new boxd replays its screen and takes keys again. And the
packaged boxctl attaches to a terminal from a pipe."""
import json
import os
import select
import signal
import subprocess
import time

from boxtest import api, boxd_main_pid, figure, serving_again, wait_until
from ws_client import BINARY, CLOSE, TEXT, WebSocket

VSOCK = (1, 1024)  # VMADDR_CID_LOCAL: the loopback transport (test_20_vsock.py)


class Session:
    """One attached client: output gathered, text events apart."""

    def __init__(self, bg_id, address=VSOCK):
        self.ws = WebSocket(timeout=30).connect(address, f"/v1/exec/{bg_id}/attach")
        self.output, self.events, self.closed = b"", [], None

    def until(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while not predicate(self):
            left = deadline - time.monotonic()
            if left <= 0 or self.closed is not None:
                raise AssertionError(f"no {what}: {self.output[-600:]!r} {self.events}")
            if not self.ws.data and not select.select([self.ws.sock], [], [], min(left, 1))[0]:
                continue
            opcode, payload = self.ws.recv()
            if opcode == BINARY:
                self.output += payload
            elif opcode == TEXT:
                self.events.append(json.loads(payload))
            elif opcode == CLOSE:
                self.closed = int.from_bytes(payload[:2], "big") if payload else 1005
        return self

    def type(self, text):
        self.ws.send_binary(text.encode())


def check_terminal_survives_sigkill():
    bg = api("POST", "/v1/exec", {"cmd": "bash --norc --noprofile -i", "background": True,
                                  "pty": {"cols": 100, "rows": 30}, "timeoutSec": 600})
    shell_pid = bg["pid"]
    first = Session(bg["bgId"])
    first.type("X=kept; echo before-$X; tput cols\r")
    first.until(lambda s: b"before-kept\r\n" in s.output and b"100\r\n" in s.output, 60,
                "the first answer")

    old_pid = boxd_main_pid()
    killed_at = time.monotonic()
    os.kill(old_pid, signal.SIGKILL)
    wait_until("boxd serving again after SIGKILL", lambda: serving_again(old_pid), 60, 0.05)
    assert os.path.exists(f"/proc/{shell_pid}"), "the terminal's bash died with boxd"

    again = Session(bg["bgId"])
    again.until(lambda s: b"before-kept" in s.output, 30, "the replay from the shim")
    figure("terminal-sigkill-to-replay-ms", f"{(time.monotonic() - killed_at) * 1000:.0f}")
    again.ws.send_text(json.dumps({"resize": [120, 40]}))
    again.type("echo after-$X; tput cols\r")
    again.until(lambda s: b"after-kept\r\n" in s.output and b"120\r\n" in s.output, 60,
                "typing on after the restart")
    again.type("exit 5\r")
    again.until(lambda s: s.closed is not None, 60, "the end")
    exit_event = next(e for e in again.events if e.get("type") == "exit")
    assert exit_event["exitCode"] == 5 and again.closed == 1000, (exit_event, again.closed)
    return "bash kept its terminal across a SIGKILL of boxd; replay, resize and keys after"


def check_boxctl_attach_from_a_pipe():
    bg = api("POST", "/v1/exec", {"cmd": "cat; echo cat-ended", "background": True,
                                  "pty": {"cols": 80, "rows": 24}, "timeoutSec": 120})
    done = subprocess.run(["boxctl", "attach", bg["bgId"]], input=b"typed-through-boxctl\n",
                          capture_output=True, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert b"typed-through-boxctl" in done.stdout and b"cat-ended" in done.stdout, done.stdout
    return "boxctl attach: piped input in, the end of the pipe a ^D, exit status passed back"
