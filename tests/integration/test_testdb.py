"""psbx-testdb on the host: its command line, its bad inputs, and when it
calls a server ready. Docker itself is in the box (tests/box/inbox/
test_47_testdb.py runs the real thing: images, tmpfs, reset, gotest); here
a stand-in `docker` on PATH records its calls and describes a container
whose published port is a server of the test's own, which plays what
Docker's port proxy and a database starting up do to a client: hang up,
then refuse ("starting up"), then answer. up must return only after the
answer, and a stopped container must leave nothing behind."""
import json
import os
import socket
import stat
import struct
import subprocess
import threading

import pytest

from conftest import BUILD_DIR

TESTDB = os.path.join(BUILD_DIR, "boxd", "testdb", "psbx-testdb")

# The stand-in: `run` records the container (its labels give engine and
# password back to `inspect`), `inspect` answers from that record, `rm`
# forgets it, `logs` and `exec` are recorded. FAKE_STATE is its folder.
FAKE_DOCKER = r'''#!/usr/bin/env python3
import json, os, sys
state = os.environ["FAKE_STATE"]
args = sys.argv[1:]
with open(os.path.join(state, "calls"), "a") as f:
    f.write(json.dumps(args) + "\n")
record = os.path.join(state, "container.json")
if args[0] == "run":
    labels = dict(a.split("=", 1) for a, prev in zip(args[1:], args) if prev == "--label")
    json.dump(labels, open(record, "w"))
    print("0123456789ab")
elif args[0] == "inspect":
    if not os.path.exists(record):
        print("Error: No such object: " + args[-1], file=sys.stderr)
        sys.exit(1)
    labels = json.load(open(record))
    running = "false" if os.path.exists(os.path.join(state, "stopped")) else "true"
    print("%s|%s|%s|127.0.0.1:%s " % (labels["psbx-testdb.engine"], labels["psbx-testdb.password"],
                                      running, os.environ["FAKE_PORT"]))
elif args[0] == "rm":
    if os.path.exists(record):
        os.unlink(record)
elif args[0] == "logs":
    print("FATAL: the stand-in server gave up")
'''


class Server:
    """A TCP server answering connections in turn from a script: "close"
    (a proxy with nothing behind it), or bytes to send after reading the
    client's first message (PostgreSQL) or at once (MySQL speaks first)."""

    def __init__(self, script, speaks_first=False):
        self.script = list(script)
        self.speaks_first = speaks_first
        self.served = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
            with conn:
                if step != "close":
                    if not self.speaks_first:
                        self.served.append(conn.recv(1024))
                    conn.sendall(step)
                    conn.recv(1024)
                self.served.append(step)

    def close(self):
        self.sock.close()


def pg_error(message):
    body = b"SFATAL\0C57P03\0M" + message.encode() + b"\0\0"
    return b"E" + struct.pack(">I", len(body) + 4) + body


PG_AUTH = b"R" + struct.pack(">II", 12, 10) + b"SCRAM-SHA-256\0\0"
MYSQL_HANDSHAKE = b"\x0a5.5.5-10.11.6-MariaDB\0" + b"\0" * 40
MYSQL_ERROR = b"\xff\x69\x04Too many connections"


def framed(payload):
    return struct.pack("<I", len(payload))[:3] + b"\0" + payload


@pytest.fixture
def fake(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    state = tmp_path / "state"
    state.mkdir()
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", FAKE_STATE=str(state),
               DOCKER_HOST="tcp://127.0.0.1:9", PSBX_TESTDB_DIR=str(tmp_path / "testdb"))

    class Fake:
        def __init__(self):
            self.env, self.state, self.dir = env, state, tmp_path / "testdb"

        def run(self, *args, server=None, **extra):
            e = dict(self.env, **extra)
            if server:
                e["FAKE_PORT"] = str(server.port)
            return subprocess.run([TESTDB, *args], env=e, capture_output=True, text=True, timeout=60)

        def calls(self):
            path = self.state / "calls"
            return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    return Fake()


def run_plain(*args, **env):
    return subprocess.run([TESTDB, *args], env=dict(os.environ, **env), capture_output=True, text=True,
                          timeout=30)


def test_usage_and_unknown_commands_are_exit_2():
    r = run_plain()
    assert r.returncode == 2 and "usage: psbx-testdb up NAME" in r.stderr
    r = run_plain("frobnicate")
    assert r.returncode == 2 and "unknown command frobnicate" in r.stderr
    r = run_plain("up", "a", "b")
    assert r.returncode == 2 and "up takes one NAME" in r.stderr
    r = run_plain("up", "a", "--image")
    assert r.returncode == 2 and "--image needs an image" in r.stderr
    r = run_plain("--help")
    assert r.returncode == 0 and "psbx-testdb gotest" in r.stdout


@pytest.mark.parametrize("name", ["Bad!", "../x", "a/b", "UPPER", "_lead", "x" * 49, "", "sp ace"])
def test_a_bad_name_is_refused_with_the_rule(name):
    for command in (["up", name], ["reset", name], ["down", name]):
        r = run_plain(*command)
        assert r.returncode == 2, (command, r)
        if name:
            assert "is not a test database name: 1 to 48 of a-z, 0-9, _ and -" in r.stderr, r.stderr


def test_docker_not_running_is_a_clear_message(tmp_path):
    r = run_plain("up", "app", DOCKER_HOST=f"unix://{tmp_path}/docker.sock",
                  PSBX_TESTDB_DIR=str(tmp_path / "testdb"))
    assert r.returncode == 1
    assert "Docker is not running: cannot connect to" in r.stderr and "systemctl start docker" in r.stderr
    assert not (tmp_path / "testdb").exists()


def test_docker_missing_is_a_clear_message(tmp_path):
    r = run_plain("ls", PATH=str(tmp_path))
    assert r.returncode == 1 and "docker is not installed" in r.stderr, r.stderr


def test_a_socket_the_user_may_not_open_is_said_as_such(tmp_path):
    # A user outside the docker group, as an agent's non-root command is.
    path = tmp_path / "docker.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.listen(1)
    path.chmod(0o600)
    tmp_path.chmod(0o755)
    as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    r = subprocess.run([*as_user, TESTDB, "up", "app"], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, DOCKER_HOST=f"unix://{path}"))
    s.close()
    assert r.returncode == 1 and "is not open to this user" in r.stderr and "docker group" in r.stderr, r.stderr


def test_gotest_refuses_an_exec_of_its_own(fake):
    for flag in (["-exec", "x"], ["-exec=x"], ["--exec", "x"]):
        r = fake.run("gotest", "-race", *flag, "./...")
        assert r.returncode == 2 and "drop yours" in r.stderr, r.stderr


def test_the_wrapper_alone_says_to_use_gotest(fake):
    r = fake.run("_exec", "/bin/true")
    assert r.returncode == 2 and "use gotest" in r.stderr


def test_up_waits_through_a_closed_port_and_starting_up_for_the_answer(fake):
    server = Server(["close", "close", pg_error("the database system is starting up"), PG_AUTH])
    try:
        r = fake.run("up", "app", server=server)
    finally:
        server.close()
    assert r.returncode == 0, r.stderr
    # It asked until the server asked for authentication, and no further.
    answered = [s for s in server.served if isinstance(s, bytes) and s[:1] in (b"R", b"E")]
    assert answered[-1] == PG_AUTH and answered.count(PG_AUTH) == 1, server.served
    startup = next(s for s in server.served if isinstance(s, bytes) and s[4:8] == struct.pack(">I", 196608))
    assert b"user\0test\0database\0test\0" in startup
    env_file = fake.dir / "app.env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(fake.dir.stat().st_mode) == 0o700
    text = env_file.read_text()
    assert text == r.stdout
    assert text.startswith("DATABASE_URL=postgres://test:") and text.endswith(
        f"@127.0.0.1:{server.port}/test?sslmode=disable\n"), text
    run_call = next(c for c in fake.calls() if c[0] == "run")
    assert ["--tmpfs", "/var/lib/postgresql/data"] == run_call[run_call.index("--tmpfs"):][:2]
    assert "127.0.0.1::5432" in run_call and run_call[-1] == "postgres:16"
    assert "POSTGRES_USER=test" in run_call and "POSTGRES_DB=test" in run_call
    password = text.split("test:")[1].split("@")[0]
    assert f"POSTGRES_PASSWORD={password}" in run_call and len(password) == 16


def test_mysql_waits_through_an_error_packet_for_the_handshake(fake):
    server = Server([framed(MYSQL_ERROR), framed(MYSQL_HANDSHAKE)], speaks_first=True)
    try:
        r = fake.run("up", "my", "--mysql", "--image", "mariadb:local", server=server)
    finally:
        server.close()
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("DATABASE_URL=mysql://test:") and r.stdout.endswith(f":{server.port}/test\n")
    run_call = next(c for c in fake.calls() if c[0] == "run")
    assert run_call[-1] == "mariadb:local" and "127.0.0.1::3306" in run_call
    assert ["--tmpfs", "/var/lib/mysql"] == run_call[run_call.index("--tmpfs"):][:2]


def test_the_image_comes_from_the_environment_when_not_named(fake):
    server = Server([PG_AUTH])
    try:
        r = fake.run("up", "app", server=server, PSBX_TESTDB_IMAGE="mirror.local/postgres:16")
    finally:
        server.close()
    assert r.returncode == 0, r.stderr
    assert next(c for c in fake.calls() if c[0] == "run")[-1] == "mirror.local/postgres:16"


def test_a_server_that_stops_on_its_way_up_leaves_nothing(fake):
    (fake.state / "stopped").touch()
    server = Server(["close"])
    try:
        r = fake.run("up", "app", server=server)
    finally:
        server.close()
    assert r.returncode == 1
    assert "stopped before it took connections" in r.stderr and "the stand-in server gave up" in r.stderr
    assert any(c[0] == "rm" for c in fake.calls())
    assert not (fake.dir / "app.env").exists()


def test_a_server_that_never_answers_times_out_with_the_probe_s_words(fake):
    server = Server([pg_error("the database system is starting up")])
    try:
        r = fake.run("up", "app", server=server, PSBX_TESTDB_TIMEOUT="1")
    finally:
        server.close()
    assert r.returncode == 1
    assert "did not take connections in 1 s (the database system is starting up)" in r.stderr, r.stderr
    assert not (fake.dir / "app.env").exists()


def test_up_again_reuses_and_the_other_engine_is_refused(fake):
    server = Server([PG_AUTH])
    try:
        first = fake.run("up", "app", server=server)
        again = fake.run("up", "app", server=server)
        other = fake.run("up", "app", "--mysql", server=server)
    finally:
        server.close()
    assert first.returncode == 0 and again.returncode == 0, (first.stderr, again.stderr)
    assert again.stdout == first.stdout and "already up" in again.stderr
    assert [c[0] for c in fake.calls()].count("run") == 1
    assert other.returncode == 1 and "is a postgres server" in other.stderr


def test_reset_and_down_of_an_unknown_name_say_so(fake):
    for command in ("reset", "down"):
        r = fake.run(command, "nosuch")
        assert r.returncode == 1 and "no test database nosuch" in r.stderr, r.stderr


def test_reset_drops_and_makes_the_database_in_the_server(fake):
    server = Server([PG_AUTH])
    try:
        up = fake.run("up", "app", server=server)
        r = fake.run("reset", "app", server=server)
        down = fake.run("down", "app", server=server)
    finally:
        server.close()
    assert up.returncode == 0 and r.returncode == 0, (up.stderr, r.stderr)
    assert r.stdout == up.stdout
    exec_call = next(c for c in fake.calls() if c[0] == "exec")
    container = exec_call.index("psbx-testdb-app")
    assert exec_call[container + 1] == "psql"
    assert 'DROP DATABASE IF EXISTS "test" WITH (FORCE)' in exec_call
    assert 'CREATE DATABASE "test" OWNER "test"' in exec_call
    assert down.returncode == 0 and not (fake.dir / "app.env").exists()
