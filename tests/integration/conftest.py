"""Fixtures for integration tests: a real boxd on temporary dirs and a
temporary socket, spoken to over HTTP, and a real Xvfb on a free display."""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_DIR = os.environ.get("BOXD_BUILD_DIR", os.path.join(REPO, "build"))
BOXD = os.path.join(BUILD_DIR, "boxd", "boxd")
BOXCTL = os.path.join(BUILD_DIR, "boxd", "ctl", "boxctl")


def _sanitized():
    try:
        libraries = subprocess.run(["ldd", BOXD], capture_output=True).stdout
    except OSError:
        return False
    return b"libasan" in libraries or b"libtsan" in libraries


# Under ASan every allocation carries shadow memory and a quarantine, under
# TSan shadow memory and a slower, larger heap (tests/tsan/), so memory bounds
# in tests are scaled by this (flat stays flat, just higher).
MEMORY_SCALE = 3 if _sanitized() else 1
# ASan also keeps freed memory in a quarantine (256 MiB by default), so a
# boxd that streams a GiB through short-lived buffers would look like it
# grows by that much: tests of a flat resident size start boxd with this.
FLAT_MEMORY_ENV = ({"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=1"}
                   if _sanitized() else {})


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("boxd", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"<Response {self.status} {self.body[:200]!r}>"


def assert_error(result, status, code, *context):
    """A call's (status, body) is the contract's error answer: that status
    with {"error": {"code": code, ...}}. `context` shows in a failure."""
    got, body = result
    assert got == status and isinstance(body, dict) and body.get("error", {}).get("code") == code, \
        (*context, got, body)


def wait_for(predicate, timeout=10.0, interval=0.02, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Boxd:
    """A boxd process of the test's own. Restartable on the same dirs."""

    def __init__(self, root, extra_args=()):
        self.root = root
        self.work_dir = os.path.join(root, "work")
        self.run_dir = os.path.join(root, "run")
        self.socket = os.path.join(self.run_dir, "boxd.sock")
        self.log_path = os.path.join(root, "boxd.log")
        self.extra_args = list(extra_args)
        # A program boxd is started through (private_keyring.py, say).
        self.wrapper = []
        self.proc = None
        self.env = dict(os.environ)
        self.env.pop("NOTIFY_SOCKET", None)
        self.env.pop("WATCHDOG_USEC", None)

    def args(self, *extra):
        return [*self.wrapper, BOXD, "--work-dir", self.work_dir, "--run-dir", self.run_dir,
                "--socket", self.socket, "--vsock-port", "off",
                "--display", self.env.get("BOXD_TEST_DISPLAY", ":65000"),
                *self.extra_args, *extra]

    def start(self, *extra, wait=True, env=None):
        self.log_file = open(self.log_path, "ab")
        # A session of its own, as systemd starts it: a command's group
        # signal aimed at boxd's group can then never reach the test runner.
        self.proc = subprocess.Popen(self.args(*extra), stdout=self.log_file,
                                     stderr=subprocess.STDOUT, env=env or self.env,
                                     start_new_session=True)
        if wait:
            wait_for(self._answers, timeout=10, what="boxd to answer on its socket")
        return self

    def _answers(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"boxd exited with {self.proc.returncode}:\n{self.log()}")
        try:
            return self.request("GET", "/v1/health", timeout=2).status == 200
        except OSError:
            return False

    def request(self, method, path, body=None, headers=None, timeout=30):
        connection = UnixConnection(self.socket, timeout=timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
                headers = {"Content-Type": "application/json", **(headers or {})}
            elif isinstance(body, str):
                body = body.encode()
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            data = response.read()
            return Response(response.status,
                            {k.lower(): v for k, v in response.getheaders()}, data)
        finally:
            connection.close()

    def call(self, method, path, obj=None, headers=None, timeout=30):
        response = self.request(method, path, obj, headers=headers, timeout=timeout)
        try:
            return response.status, response.json()
        except ValueError:
            return response.status, response.body

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=20)
        return self.proc.returncode

    def stop(self):
        code = self.kill(signal.SIGTERM)
        if getattr(self, "log_file", None):
            self.log_file.close()
        return code

    def boxctl(self, *args, input=None, env=None, timeout=60):
        """boxctl with `input` as its stdin, else /dev/null (boxctl exec
        passes a stdin that is not a terminal on to the command)."""
        environment = dict(os.environ, BOXD_SOCKET=self.socket, **(env or {}))
        stdin = {"input": input} if input is not None else {"stdin": subprocess.DEVNULL}
        return subprocess.run([BOXCTL, *args], capture_output=True, env=environment,
                              timeout=timeout, **stdin)


@pytest.fixture
def boxd_factory(tmp_path):
    started = []

    def make(*extra_args, start=True, env=None):
        root = tempfile.mkdtemp(dir=tmp_path, prefix="boxd-")
        instance = Boxd(root, extra_args)
        if env:
            instance.env.update(env)
        started.append(instance)
        if start:
            instance.start()
        return instance

    yield make
    for instance in started:
        instance.stop()


@pytest.fixture
def boxd(boxd_factory):
    return boxd_factory()


PRIVATE_KEYRING = [sys.executable, os.path.join(os.path.dirname(__file__), "private_keyring.py")]


@pytest.fixture(params=["shared", "private"], ids=["session-keyring", "private-keyring"])
def keyring_boxd(boxd_factory, request):
    """A boxd started in the caller's session keyring, and one started as
    systemd starts it, in a private one of each start's own."""
    box = boxd_factory(start=False)
    if request.param == "private":
        box.wrapper = PRIVATE_KEYRING
    return box.start()


class Xvfb:
    """A real Xvfb. The server picks a free display number itself
    (-displayfd), so parallel test runs never race for one."""

    def __init__(self, width=1280, height=800):
        self.width, self.height = width, height
        self.number = None
        self.display = None
        self.proc = None

    def start(self):
        screen = ["-screen", "0", f"{self.width}x{self.height}x24", "-nolisten", "tcp", "-noreset"]
        if self.number is None:
            read_end, write_end = os.pipe()
            self.proc = subprocess.Popen(["Xvfb", "-displayfd", str(write_end), *screen],
                                         pass_fds=(write_end,), stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
            os.close(write_end)
            with os.fdopen(read_end) as f:
                line = f.readline()
            if not line.strip():
                raise RuntimeError("Xvfb did not start")
            self.number = int(line)
            self.display = f":{self.number}"
        else:
            self.proc = subprocess.Popen(["Xvfb", self.display, *screen],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: os.path.exists(f"/tmp/.X11-unix/X{self.number}"), timeout=10,
                 what=f"Xvfb {self.display}")
        return self

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for path in (f"/tmp/.X11-unix/X{self.number}", f"/tmp/.X{self.number}-lock"):
            try:
                os.unlink(path)
            except OSError:
                pass

    def restart(self):
        self.kill()
        return self.start()


@pytest.fixture
def xvfb():
    if subprocess.run(["which", "Xvfb"], capture_output=True).returncode != 0:
        pytest.skip("Xvfb is not installed (packaging/install-deps installs it)")
    server = Xvfb().start()
    yield server
    server.kill()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI (CI set, as .ci/run does) everything install-deps names is
    installed, so a test skipped for want of a package (its reason points at
    install-deps) is a failure: the list lacks something."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI") and isinstance(report.longrepr, tuple) \
            and "install-deps" in report.longrepr[2]:
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where install-deps --all has run: {report.longrepr[2]}"
