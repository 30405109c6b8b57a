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
import shutil
import socket
import stat
import struct
import subprocess
import tempfile
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


class SessionServer:
    """A server on 127.0.0.1 running `_session(conn)` on a thread per
    connection; a client hanging up ends its session quietly. `password()`
    is what it accepts; logins and queries are recorded."""

    def __init__(self, password):
        self.password = password
        self.queries, self.logins, self.databases = [], [], []
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
            threading.Thread(target=self._session_of, args=(conn,), daemon=True).start()

    def _session_of(self, conn):
        with conn:
            try:
                self._session(conn)
            except OSError:
                pass

    def close(self):
        self.sock.close()

    @staticmethod
    def _exactly(conn, count):
        data = b""
        while len(data) < count:
            piece = conn.recv(count - len(data))
            if not piece:
                raise OSError("the client hung up")  # the probe does, after 'R'
            data += piece
        return data



class Server:
    """A TCP server answering connections in turn from a script: "close"
    (a proxy with nothing behind it), or bytes to send after reading the
    client's first message (PostgreSQL) or at once (MySQL speaks first).
    The last step answers every later connection."""

    def __init__(self, script, speaks_first=False):
        self.script = list(script)
        self.speaks_first = speaks_first
        self.served = []
        self.listener = SessionServer(None)
        self.listener._session = self._step
        self.port = self.listener.port

    def _step(self, conn):
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if step != "close" and not self.speaks_first:
            self.served.append(conn.recv(1024))
        # Noted before it is sent: the client may be done at once.
        self.served.append(step)
        if step != "close":
            conn.sendall(step)
            conn.recv(1024)

    def close(self):
        self.listener.close()


def pg_error(message):
    body = b"SFATAL\0C57P03\0M" + message.encode() + b"\0\0"
    return b"E" + struct.pack(">I", len(body) + 4) + body


PG_AUTH = b"R" + struct.pack(">II", 4 + 4 + 15, 10) + b"SCRAM-SHA-256\0\0"
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


@pytest.fixture
def docker_cli():
    """A PATH with a `docker` on it that any user may run (the machine may
    have no Docker at all): what these tests see is the daemon's socket."""
    folder = tempfile.mkdtemp(prefix="testdb-cli.")
    os.chmod(folder, 0o755)
    with open(os.path.join(folder, "docker"), "w") as f:
        f.write("#!/bin/sh\nexit 1\n")
    os.chmod(os.path.join(folder, "docker"), 0o755)
    yield f"{folder}:{os.environ['PATH']}"
    shutil.rmtree(folder)


def test_docker_not_running_is_a_clear_message(tmp_path, docker_cli):
    r = run_plain("up", "app", DOCKER_HOST=f"unix://{tmp_path}/docker.sock",
                  PSBX_TESTDB_DIR=str(tmp_path / "testdb"), PATH=docker_cli)
    assert r.returncode == 1
    assert "Docker is not running: cannot connect to" in r.stderr and "systemctl start docker" in r.stderr
    assert not (tmp_path / "testdb").exists()


def test_docker_missing_is_a_clear_message(tmp_path):
    r = run_plain("ls", PATH=str(tmp_path))
    assert r.returncode == 1 and "docker is not installed" in r.stderr, r.stderr


def test_a_socket_the_user_may_not_open_is_said_as_such(tmp_path, docker_cli):
    # A user outside the docker group, as an agent's non-root command is.
    path = tmp_path / "docker.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.listen(1)
    path.chmod(0o600)
    tmp_path.chmod(0o755)
    as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    r = subprocess.run([*as_user, TESTDB, "up", "app"], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, DOCKER_HOST=f"unix://{path}", PATH=docker_cli))
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


class ScramServer(SessionServer):
    """A PostgreSQL server for reset's client: SCRAM-SHA-256 (RFC 7677)
    checked with Python's own hashes, then simple queries. Before version
    15 CREATE DATABASE knows no STRATEGY."""

    version = 16

    def _read(self, conn, typed=True):
        head = self._exactly(conn, 5 if typed else 4)
        body = self._exactly(conn, struct.unpack(">I", head[-4:])[0] - 4)
        return (head[:1] if typed else b""), body

    @staticmethod
    def _send(conn, kind, body):
        conn.sendall(kind + struct.pack(">I", len(body) + 4) + body)

    def _session(self, conn):
        import base64
        import hashlib
        import hmac
        _, startup = self._read(conn, typed=False)
        params = startup[4:].split(b"\0")
        self.databases.append(params[params.index(b"database") + 1].decode())
        self._send(conn, b"R", struct.pack(">I", 10) + b"SCRAM-SHA-256\0\0")
        _, body = self._read(conn)
        mechanism, rest = body.split(b"\0", 1)
        assert mechanism == b"SCRAM-SHA-256"
        client_first = rest[4:].decode()
        assert client_first.startswith("n,,")
        client_first_bare = client_first[3:]
        nonce = dict(kv.split("=", 1) for kv in client_first_bare.split(","))["r"] + "server"
        salt = os.urandom(16)
        server_first = f"r={nonce},s={base64.b64encode(salt).decode()},i=4096"
        self._send(conn, b"R", struct.pack(">I", 11) + server_first.encode())
        _, body = self._read(conn)
        client_final = body.decode()
        without_proof, proof = client_final.rsplit(",p=", 1)
        assert without_proof == f"c=biws,r={nonce}", without_proof
        salted = hashlib.pbkdf2_hmac("sha256", self.password().encode(), salt, 4096)
        stored = hashlib.sha256(hmac.new(salted, b"Client Key", "sha256").digest()).digest()
        auth = f"{client_first_bare},{server_first},{without_proof}".encode()
        signature = hmac.new(stored, auth, "sha256").digest()
        client_key = bytes(a ^ b for a, b in zip(base64.b64decode(proof), signature))
        if hashlib.sha256(client_key).digest() != stored:
            self._send(conn, b"E", b"SFATAL\0C28P01\0Mpassword authentication failed for user \"test\"\0\0")
            self.logins.append(False)
            return
        self.logins.append(True)
        server_key = hmac.new(salted, b"Server Key", "sha256").digest()
        verifier = base64.b64encode(hmac.new(server_key, auth, "sha256").digest())
        self._send(conn, b"R", struct.pack(">I", 12) + b"v=" + verifier)
        self._send(conn, b"R", struct.pack(">I", 0))
        self._send(conn, b"Z", b"I")
        while True:
            kind, body = self._read(conn)
            if kind == b"X":
                return
            query = body.rstrip(b"\0").decode()
            self.queries.append(query)
            if self.version < 15 and "STRATEGY" in query:
                self._send(conn, b"E", b"SERROR\0C42601\0Moption \"strategy\" not recognized\0\0")
            else:
                self._send(conn, b"C", b"DONE\0")
            self._send(conn, b"Z", b"I")


def password_of(fake):
    return json.loads((fake.state / "container.json").read_text())["psbx-testdb.password"]


def test_reset_drops_and_makes_the_database_over_scram(fake):
    server = ScramServer(lambda: password_of(fake))
    try:
        up = fake.run("up", "app", server=server)
        calls_before = len(fake.calls())
        r = fake.run("reset", "app", server=server)
        reset_calls = fake.calls()[calls_before:]
        down = fake.run("down", "app", server=server)
    finally:
        server.close()
    assert up.returncode == 0 and r.returncode == 0, (up.stderr, r.stderr)
    assert r.stdout == up.stdout
    # The env file names the server: reset asks Docker nothing.
    assert reset_calls == [], reset_calls
    assert server.logins == [True] and server.databases[-1] == "postgres"
    assert server.queries == ['DROP DATABASE IF EXISTS "test" WITH (FORCE)',
                              'CREATE DATABASE "test" OWNER "test" STRATEGY FILE_COPY'], server.queries
    assert not any(c[0] == "exec" for c in fake.calls()), "reset went through docker exec"
    assert down.returncode == 0 and not (fake.dir / "app.env").exists()


def test_reset_with_a_wrong_password_says_the_server_s_words(fake):
    server = ScramServer(lambda: "not-the-password")
    try:
        up = fake.run("up", "app", server=server)
        r = fake.run("reset", "app", server=server)
    finally:
        server.close()
    assert up.returncode == 0, up.stderr
    assert r.returncode == 1 and server.logins == [False]
    assert 'password authentication failed for user "test"' in r.stderr, r.stderr
    assert server.queries == []


class NativeServer(SessionServer):
    """A MySQL server: a protocol-10 handshake, the login checked as
    mysql_native_password with Python's hashes (or, with `method`, a switch
    to another method), then COM_QUERY."""

    def __init__(self, password, method="mysql_native_password"):
        super().__init__(password)
        self.method = method

    @staticmethod
    def _send(conn, sequence, payload):
        conn.sendall(struct.pack("<I", len(payload))[:3] + bytes([sequence]) + payload)

    def _read(self, conn):
        head = self._exactly(conn, 4)
        return head[3], self._exactly(conn, int.from_bytes(head[:3], "little"))

    def _session(self, conn):
        import hashlib
        scramble = os.urandom(20).replace(b"\0", b"x")
        hello = (b"\x0a" + b"10.11.6-MariaDB\0" + struct.pack("<I", 7) + scramble[:8] + b"\0" +
                 struct.pack("<H", 0xf7ff) + bytes([45]) + struct.pack("<H", 2) +
                 struct.pack("<H", 0x81bf) + bytes([21]) + b"\0" * 10 + scramble[8:] + b"\0" +
                 b"mysql_native_password\0")
        self._send(conn, 0, hello)
        sequence, login = self._read(conn)
        user_end = login.index(b"\0", 32)
        user = login[32:user_end].decode()
        token = login[user_end + 2:user_end + 2 + login[user_end + 1]]
        if self.method != "mysql_native_password":
            self._send(conn, sequence + 1, b"\xfe" + self.method.encode() + b"\0" + scramble + b"\0")
            self.logins.append(("switched", user))
            return
        once = hashlib.sha1(self.password().encode()).digest()
        mixed = hashlib.sha1(scramble + hashlib.sha1(once).digest()).digest()
        if bytes(a ^ b for a, b in zip(token, mixed)) != once:
            self._send(conn, sequence + 1, b"\xff\x15\x04#28000Access denied for user 'root'@'127.0.0.1'")
            self.logins.append((False, user))
            return
        self.logins.append((True, user))
        self._send(conn, sequence + 1, b"\x00\x00\x00\x02\x00\x00\x00")
        while True:
            _, packet = self._read(conn)
            if packet[:1] == b"\x01":
                return
            self.queries.append(packet[1:].decode())
            self._send(conn, 1, b"\x00\x00\x00\x02\x00\x00\x00")


def test_mysql_reset_logs_in_natively_and_runs_three_statements(fake):
    server = NativeServer(lambda: password_of(fake))
    try:
        up = fake.run("up", "my", "--mysql", server=server)
        r = fake.run("reset", "my", server=server)
    finally:
        server.close()
    assert up.returncode == 0 and r.returncode == 0, (up.stderr, r.stderr)
    assert server.logins == [(True, "root")]
    assert server.queries == ["DROP DATABASE IF EXISTS `test`", "CREATE DATABASE `test`",
                              "GRANT ALL ON `test`.* TO 'test'@'%'"], server.queries
    assert not any(c[0] == "exec" for c in fake.calls())


def test_mysql_reset_with_a_wrong_password_says_the_server_s_words(fake):
    server = NativeServer(lambda: "not-the-password")
    try:
        fake.run("up", "my", "--mysql", server=server)
        r = fake.run("reset", "my", server=server)
    finally:
        server.close()
    assert r.returncode == 1 and "Access denied for user 'root'" in r.stderr, r.stderr
    assert server.queries == []


def test_mysql_reset_of_a_caching_sha2_root_goes_through_the_container_s_client(fake):
    # MySQL 8.0's own default: its first login wants TLS or the server's
    # RSA key, so the image's client in the container does it instead.
    server = NativeServer(lambda: password_of(fake), method="caching_sha2_password")
    try:
        fake.run("up", "my", "--mysql", server=server)
        r = fake.run("reset", "my", server=server)
    finally:
        server.close()
    assert r.returncode == 0, r.stderr
    assert server.logins == [("switched", "root")]
    exec_call = next(c for c in fake.calls() if c[0] == "exec")
    assert exec_call[exec_call.index("psbx-testdb-my") + 1:][:2] == ["mysql", "-uroot"]
    assert exec_call[-1] == ("DROP DATABASE IF EXISTS `test`; CREATE DATABASE `test`; "
                             "GRANT ALL ON `test`.* TO 'test'@'%'")


# A stand-in for go: `go test -exec WRAPPER ARGS` runs WRAPPER on a "test
# binary" (printenv) from two package folders, as go test does, and records
# its arguments; with FAKE_GO_SLEEP it sleeps instead, in the background
# too, as a test binary past go test's end would.
FAKE_GO = r'''#!/bin/bash
printf '%s\n' "$@" >"$FAKE_STATE/go-args"
if [ -n "${FAKE_GO_SLEEP:-}" ]; then
	sleep 300 &
	echo $! >"$FAKE_STATE/go-child"
	wait
fi
for pkg in "$FAKE_STATE"/pkg/alpha "$FAKE_STATE"/pkg/beta; do
	(cd "$pkg" && $3 /usr/bin/printenv DATABASE_URL) >>"$FAKE_STATE/urls" || exit 1
done
exit "${FAKE_GO_EXIT:-0}"
'''


@pytest.fixture
def fake_go(fake):
    bin_dir = fake.state.parent / "bin"
    (bin_dir / "go").write_text(FAKE_GO)
    (bin_dir / "go").chmod(0o755)
    for pkg in ("alpha", "beta"):
        (fake.state / "pkg" / pkg).mkdir(parents=True)
    return fake


def test_gotest_gives_each_package_a_database_and_removes_the_server(fake_go):
    server = ScramServer(lambda: password_of(fake_go))
    try:
        r = fake_go.run("gotest", "-race", "./...", server=server, FAKE_GO_EXIT="3")
    finally:
        server.close()
    assert r.returncode == 3, r.stderr  # go test's own status
    args = (fake_go.state / "go-args").read_text().splitlines()
    assert args[:2] == ["test", "-exec"] and args[2].endswith("psbx-testdb _exec"), args
    assert args[3:] == ["-race", "./..."]
    urls = (fake_go.state / "urls").read_text().split()
    databases = [u.rsplit("/", 1)[1].split("?")[0] for u in urls]
    assert len(set(databases)) == 2 and databases[0].startswith("pkg_alpha_") and \
        databases[1].startswith("pkg_beta_"), databases
    assert f'CREATE DATABASE "{databases[0]}" OWNER "test" STRATEGY FILE_COPY' in server.queries
    assert f'DROP DATABASE IF EXISTS "{databases[1]}" WITH (FORCE)' in server.queries
    # The run's own server: no env file, and gone at the end.
    assert any(c[0] == "rm" for c in fake_go.calls())
    assert not (fake_go.state / "container.json").exists()
    assert not fake_go.dir.exists() or list(fake_go.dir.iterdir()) == []


def test_gotest_passes_sigterm_to_go_and_its_tests_then_removes_the_server(fake_go):
    import signal
    import time
    server = ScramServer(lambda: password_of(fake_go))
    env = dict(fake_go.env, FAKE_PORT=str(server.port), FAKE_GO_SLEEP="1")
    proc = subprocess.Popen([TESTDB, "gotest", "./..."], env=env, stderr=subprocess.PIPE, text=True)
    try:
        child = fake_go.state / "go-child"
        deadline = time.monotonic() + 30
        while not child.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.exists(), "go never started"
        sleeper = int(child.read_text())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        proc.kill()
        server.close()
    # The whole group got it, the background sleeper too, and the server went.
    assert not os.path.exists(f"/proc/{sleeper}") or \
        open(f"/proc/{sleeper}/stat").read().split()[2] == "Z"
    assert any(c[0] == "rm" for c in fake_go.calls())


def test_reset_with_a_stale_env_file_asks_docker_where_the_server_is(fake):
    server = ScramServer(lambda: password_of(fake))
    try:
        up = fake.run("up", "app", server=server)
        env_file = fake.dir / "app.env"
        # As if the server had been made again at another port.
        env_file.write_text(env_file.read_text().replace(f":{server.port}/", ":9/"))
        r = fake.run("reset", "app", server=server)
    finally:
        server.close()
    assert up.returncode == 0 and r.returncode == 0, (up.stderr, r.stderr)
    assert r.stdout == up.stdout and env_file.read_text() == up.stdout
    assert any(c[0] == "inspect" for c in fake.calls())


def test_reset_on_a_server_before_15_makes_the_database_its_way(fake):
    server = ScramServer(lambda: password_of(fake))
    server.version = 14
    try:
        assert fake.run("up", "app", server=server).returncode == 0
        r = fake.run("reset", "app", server=server)
    finally:
        server.close()
    assert r.returncode == 0, r.stderr
    assert server.queries == ['DROP DATABASE IF EXISTS "test" WITH (FORCE)',
                              'CREATE DATABASE "test" OWNER "test" STRATEGY FILE_COPY',
                              'CREATE DATABASE "test" OWNER "test"'], server.queries


def test_reset_with_an_env_file_but_no_server_says_there_is_none(fake):
    server = ScramServer(lambda: password_of(fake))
    try:
        assert fake.run("up", "app", server=server).returncode == 0
    finally:
        server.close()
    (fake.state / "container.json").unlink()  # removed by hand, the file left
    r = fake.run("reset", "app", server=server)
    assert r.returncode == 1 and "there is no test database app running" in r.stderr, r.stderr
