"""boxctl shell and boxctl attach: boxctl itself on a real pseudo-terminal
(as a person's terminal would run it) against a real boxd, real bash and
real terminal programs in the box."""
import fcntl
import os
import select
import signal
import struct
import subprocess
import termios
import time

from conftest import BOXCTL
from exec_helpers import start_bg, wait_exited

TERM_SIZE = {"cols": 80, "rows": 24}


def set_size(fd, cols, rows):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Terminal:
    """boxctl with a pseudo-terminal as its stdin, stdout and stderr; this
    side holds the master, as a terminal emulator does."""

    def __init__(self, boxd, *args, cols=80, rows=24):
        self.master, slave = os.openpty()
        set_size(self.master, cols, rows)
        self.mode_before = termios.tcgetattr(slave)
        env = dict(os.environ, BOXD_SOCKET=boxd.socket)
        self.proc = subprocess.Popen([BOXCTL, *args], stdin=slave, stdout=slave, stderr=slave,
                                     env=env, start_new_session=True)
        self.slave = slave
        self.output = b""

    def read_until(self, needle, timeout=20):
        """Reads until `needle` (bytes) is in what was read since the start."""
        deadline = time.monotonic() + timeout
        while needle not in self.output:
            left = deadline - time.monotonic()
            assert left > 0, f"no {needle!r} on the terminal; it showed {self.output[-2000:]!r}"
            if select.select([self.master], [], [], min(left, 0.2))[0]:
                try:
                    self.output += os.read(self.master, 65536)
                except OSError:  # EIO: boxctl closed its end
                    time.sleep(0.05)
        return self.output

    def type(self, text):
        os.write(self.master, text.encode() if isinstance(text, str) else text)

    def resize(self, cols, rows):
        set_size(self.master, cols, rows)
        # No controlling terminal (a session of its own): say it as the
        # kernel would to the foreground group.
        self.proc.send_signal(signal.SIGWINCH)

    def wait(self, timeout=20):
        """boxctl's exit status, reading the terminal meanwhile so that
        boxctl never blocks on a full one."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            assert time.monotonic() < deadline, f"boxctl did not exit: {self.output[-2000:]!r}"
            if select.select([self.master], [], [], 0.1)[0]:
                try:
                    self.output += os.read(self.master, 65536)
                except OSError:
                    pass
        return self.proc.returncode

    def mode(self):
        return termios.tcgetattr(self.slave)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)
        os.close(self.slave)


def shell(boxd, *args, **size):
    terminal = Terminal(boxd, "shell", *args, **size)
    # bash -i's prompt ends with "# " for root or "$ " for the rest.
    terminal.read_until(b"# " if not args else b"")
    return terminal


def test_shell_needs_a_terminal(boxd):
    out = boxd.boxctl("shell")
    assert out.returncode == 2, out
    assert b"not a terminal" in out.stderr and b"boxctl exec" in out.stderr, out.stderr


def test_attach_to_an_unknown_command_says_boxds_message(boxd):
    out = boxd.boxctl("attach", "b_nosuchcommand")
    assert out.returncode == 1, out
    assert out.stderr.startswith(b"boxctl: ") and b"b_nosuchcommand" in out.stderr, out.stderr


def test_shell_runs_commands_and_exits_with_their_status(boxd):
    terminal = shell(boxd)
    try:
        terminal.type("echo $((6*7))\r")
        # The typed line is echoed as "$((6*7))": 42 is the shell's answer.
        terminal.read_until(b"42\r\n")
        terminal.type("exit 3\r")
        assert terminal.wait() == 3
        # Raw mode is off again: the terminal is as boxctl found it.
        assert terminal.mode() == terminal.mode_before
    finally:
        terminal.close()


def test_shell_starts_at_the_local_size_and_follows_it(boxd):
    terminal = shell(boxd, cols=91, rows=27)
    try:
        terminal.type("echo C$(tput cols)x$(tput lines)C\r")
        terminal.read_until(b"C91x27C")
        terminal.resize(132, 40)
        time.sleep(0.3)  # the resize travels apart from the typing
        terminal.type("echo D$(tput cols)x$(tput lines)D\r")
        terminal.read_until(b"D132x40D")
        terminal.type("exit\r")
        assert terminal.wait() == 0
    finally:
        terminal.close()


def test_shell_runs_the_given_command_with_options(boxd, tmp_path):
    terminal = Terminal(boxd, "shell", "--cwd", str(tmp_path), "-e", "GREETING=hi there",
                        "echo", '"[$GREETING]"', "$PWD", "$TERM;", "exit", "4")
    try:
        terminal.read_until(f"[hi there] {tmp_path} xterm-256color".encode())
        assert terminal.wait() == 4
        assert terminal.mode() == terminal.mode_before
    finally:
        terminal.close()


def test_ctrl_c_goes_to_the_command(boxd):
    terminal = shell(boxd)
    try:
        terminal.type("sleep 30; echo after\r")
        time.sleep(0.5)
        terminal.type(b"\x03")  # a byte in raw mode: the box's terminal makes it SIGINT
        terminal.type("echo code=$?\r")
        terminal.read_until(b"code=130")
        assert terminal.proc.poll() is None
        terminal.type("exit\r")
        assert terminal.wait() == 0
        assert b"\rafter" not in terminal.output
    finally:
        terminal.close()


def test_detach_keys_leave_the_command_running_to_attach_again(boxd):
    terminal = shell(boxd)
    try:
        terminal.type("X=kept\r")
        terminal.type(b"\x10")  # Ctrl-P alone is held back, not yet sent...
        time.sleep(0.2)
        terminal.type(b"\x11")  # ...and with Ctrl-Q is the detach
        assert terminal.wait() == 0
        assert terminal.mode() == terminal.mode_before
        message = terminal.read_until(b"boxctl attach b_")
        exec_id = "b_" + message.split(b"boxctl attach b_", 1)[1].split()[0].decode()
    finally:
        terminal.close()
    # The same shell, attached again without a terminal: input piped in.
    out = boxd.boxctl("attach", exec_id, input=b"echo got=$X\nexit 6\n")
    assert out.returncode == 6, out
    assert b"got=kept" in out.stdout, out.stdout


def test_attach_from_a_terminal_replays_the_screen(boxd):
    exec_id = start_bg(boxd, "echo ready-to-read; cat", pty=TERM_SIZE)
    terminal = Terminal(boxd, "attach", exec_id)
    try:
        terminal.read_until(b"ready-to-read")
        terminal.type("typed line\r")
        terminal.read_until(b"typed line\r\ntyped line")  # the box's echo, then cat's copy
        terminal.type(b"\x04")  # ^D: cat sees the end of its input
        assert terminal.wait() == 0
        assert terminal.mode() == terminal.mode_before
    finally:
        terminal.close()


def test_attach_pipes_stdin_and_its_end_closes_the_commands(boxd):
    exec_id = start_bg(boxd, "cat; echo cat-ended; exit 7", pty=TERM_SIZE)
    out = boxd.boxctl("attach", exec_id, input=b"first\nsecond\n")
    assert out.returncode == 7, out
    assert b"first" in out.stdout and b"second" in out.stdout and b"cat-ended" in out.stdout
    assert wait_exited(boxd, exec_id)["exitCode"] == 7


def test_attach_to_a_command_without_a_terminal(boxd):
    exec_id = start_bg(boxd, "read line; echo \"read:$line\"; exit 2",
                       stdin={"stream": True})
    out = boxd.boxctl("attach", exec_id, input=b"piped\n")
    assert out.returncode == 2, out
    assert b"read:piped" in out.stdout, out


def test_a_signal_to_boxctl_restores_the_terminal_and_says_how_to_return(boxd):
    terminal = shell(boxd)
    try:
        terminal.proc.send_signal(signal.SIGTERM)
        assert terminal.wait() == 128 + signal.SIGTERM
        assert terminal.mode() == terminal.mode_before
        message = terminal.read_until(b"the command still runs: boxctl attach b_")
        exec_id = "b_" + message.split(b"boxctl attach b_", 1)[1].split()[0].decode()
    finally:
        terminal.close()
    out = boxd.boxctl("attach", exec_id, input=b"exit 9\n")
    assert out.returncode == 9, out


def test_boxd_going_away_ends_the_session_with_a_way_back(boxd):
    terminal = shell(boxd)
    try:
        boxd.kill(signal.SIGKILL)
        assert terminal.wait() == 1
        assert terminal.mode() == terminal.mode_before
        terminal.read_until(b"the connection to boxd ended; the command still runs: "
                            b"boxctl attach b_")
    finally:
        terminal.close()


def test_attach_to_an_ended_command_shows_its_output_and_status(boxd):
    exec_id = start_bg(boxd, "echo said-before-the-end; exit 5", pty=TERM_SIZE)
    wait_exited(boxd, exec_id)
    out = boxd.boxctl("attach", exec_id)
    assert out.returncode == 5, out
    assert out.stdout == b"said-before-the-end\r\n", out
    assert b"has ended" in out.stderr, out
