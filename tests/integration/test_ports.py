"""GET /v1/ports and boxctl ports: every listening TCP socket in the box, the
process holding it, the command of boxd's that started it, its container."""
import json
import os
import secrets as random_tokens
import shutil
import signal
import socket
import subprocess
import sys
import threading

import pytest

from conftest import wait_for
from exec_helpers import box, cleanup, proc, start_bg, wait_exited  # noqa: F401 (box is a fixture)
from test_cgroups import cgroup2_mount

# A listener that says where it listens: "PID PORT" in a file of its own
# beside it (announce.PID, made whole by a rename). Not on stdout: the log
# holds back the tail of a line that could begin a secret's encoded form
# while the command stays silent, and these stay silent.
LISTENER = """import os, socket, sys, time
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(family)
s.bind((sys.argv[1], 0))
s.listen()
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"announce.{os.getpid()}")
with open(path + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {s.getsockname()[1]}")
os.rename(path + ".tmp", path)
time.sleep(600)
"""
TOKEN = "tok-7c1e-PORTS-secret-value-0042"


def write_listener(boxd):
    path = os.path.join(boxd.work_dir, "listener.py")
    with open(path, "w") as f:
        f.write(LISTENER)
    return path


def listening(boxd, bg_id, count):
    """(pid, port) of each of the `count` listeners command `bg_id` started
    (the announcements not taken by an earlier call)."""
    taken = boxd.__dict__.setdefault("announcements_taken", set())

    def announced():
        names = [n for n in os.listdir(boxd.work_dir)
                 if n.startswith("announce.") and not n.endswith(".tmp") and n not in taken]
        return names if len(names) >= count else None
    names = wait_for(announced, what=f"the listeners of {bg_id}")
    taken.update(names)
    found = []
    for name in names:
        with open(os.path.join(boxd.work_dir, name)) as f:
            pid, port = f.read().split()
        found.append((int(pid), int(port)))
    return found


def ports(boxd):
    status, answer = boxd.call("GET", "/v1/ports")
    assert status == 200, answer
    assert set(answer) == {"ports"}
    for entry in answer["ports"]:
        assert set(entry) == {"port", "address", "pid", "command", "execId", "container"}, entry
    return answer["ports"]


def entry_of(boxd, port, pid):
    found = [p for p in ports(boxd) if p["port"] == port and p["pid"] == pid]
    assert len(found) == 1, (port, pid, ports(boxd))
    return found[0]


def stop(boxd, bg_id):
    boxd.call("POST", f"/v1/procs/{bg_id}/stop", {"signal": "SIGKILL"})
    wait_exited(boxd, bg_id)


def test_a_commands_listeners_name_it(box):
    """IPv4 and IPv6 listeners of a background command: their port, address,
    process and command line, and the command's id; a daemon that left the
    command's session (setsid, reparented to the shim) is still the
    command's, as is a listener in a cgroup the command made below its own."""
    script = write_listener(box)
    bg_id = start_bg(box, f"python3 {script} 127.0.0.1 & python3 {script} ::1 & "
                          f"(setsid python3 {script} 127.0.0.1 &); wait")
    (v4_pid, v4), (v6_pid, v6), (daemon_pid, daemon_port) = sorted(
        listening(box, bg_id, 3), key=lambda found: found[0])
    try:
        entry = entry_of(box, v4, v4_pid)
        assert entry == {"port": v4, "address": "127.0.0.1", "pid": v4_pid,
                         "command": f"python3 {script} 127.0.0.1", "execId": bg_id,
                         "container": None}
        entry = entry_of(box, v6, v6_pid)
        assert entry["address"] == "::1" and entry["execId"] == bg_id
        assert entry["command"] == f"python3 {script} ::1"
        assert entry_of(box, daemon_port, daemon_pid)["execId"] == bg_id
        answer = ports(box)
        assert answer == sorted(answer, key=lambda p: p["port"]), "sorted by port"
    finally:
        stop(box, bg_id)
    # The setsid daemon may outlive the command's end by a moment.
    wait_for(lambda: not [p for p in ports(box) if p["port"] in (v4, v6, daemon_port)],
             what="the listeners to go")


def test_a_listener_in_a_cgroup_below_the_commands(box):
    """A command may make cgroups below its own (a container runtime, a
    service manager): what runs there is still the command's."""
    script = write_listener(box)
    mount = cgroup2_mount()
    probe = start_bg(box, "sed -n 's/^0:://p' /proc/self/cgroup")
    wait_exited(box, probe)
    with open(proc(box, probe)["logPath"]) as f:
        command_cgroup = f.read().strip()
    if not mount or command_cgroup in ("", "/"):
        pytest.skip("commands get no cgroup v2 of their own here")
    bg_id = start_bg(box, f'd="{mount}$(sed -n "s/^0:://p" /proc/self/cgroup)/listener" && '
                          'mkdir "$d" && echo $$ > "$d/cgroup.procs" && '
                          f'exec python3 {script} 127.0.0.1')
    (pid, port), = listening(box, bg_id, 1)
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            assert f.read().rstrip().endswith("/listener")
        assert entry_of(box, port, pid)["execId"] == bg_id
    finally:
        stop(box, bg_id)


def test_a_listener_started_elsewhere_has_no_exec_id(box):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        entry = entry_of(box, listener.getsockname()[1], os.getpid())
        assert entry["execId"] is None and entry["container"] is None
        assert entry["address"] == "127.0.0.1"
        with open("/proc/self/cmdline", "rb") as f:
            mine = f.read().rstrip(b"\0").replace(b"\0", b" ").decode()
        assert entry["command"] == mine[:200] + (" ..." if len(mine.encode()) > 200 else "")
    finally:
        listener.close()


@pytest.fixture
def sbox(box):
    """A box whose secrets are cleared from the kernel keyring afterwards."""
    yield box
    if box.proc and box.proc.poll() is None:
        box.call("PUT", "/v1/secrets", {"secrets": {}})


def test_commands_are_masked_then_cut(sbox):
    """A secret in a command line comes back masked, also where the 200-byte
    cut falls inside it (masked first, then cut: no prefix of it shows), and
    the cut never splits a character."""
    assert sbox.call("PUT", "/v1/secrets", {"secrets": {"PORTS_TOKEN": TOKEN}})[0] == 200
    script = write_listener(sbox)
    head = f"python3 {script} 127.0.0.1 "
    padding = "p" * (190 - len(head))
    bg_id = start_bg(sbox, f'python3 {script} 127.0.0.1 --token "$PORTS_TOKEN" & '
                           f'python3 {script} 127.0.0.1 {padding} "$PORTS_TOKEN" {"x" * 100} & '
                           f'python3 {script} 127.0.0.1 {"é" * 150} & wait')
    found = listening(sbox, bg_id, 3)
    try:
        commands = [entry_of(sbox, port, pid)["command"] for pid, port in found]
        assert all(TOKEN[:6] not in command for command in commands), commands
        short, = [c for c in commands if "--token" in c]
        assert short == f"python3 {script} 127.0.0.1 --token ****"
        cut, = [c for c in commands if padding in c]
        assert cut == f"{head}{padding} **** {'x' * (200 - len(head) - len(padding) - 6)} ..."
        accents, = [c for c in commands if "é" in c]
        assert accents.endswith("é ...") and len(accents.encode()) <= 204
        assert len(accents[:-4].encode()) in (199, 200)
    finally:
        stop(sbox, bg_id)


def test_calls_at_once_share_a_scan(box):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    results = []

    def call():
        status, answer = box.call("GET", "/v1/ports")
        results.append((status, [p for p in answer["ports"] if p["port"] == port]))
    try:
        threads = [threading.Thread(target=call) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        listener.close()
    assert len(results) == 8
    assert all(status == 200 and len(found) == 1 and found[0]["pid"] == os.getpid()
               for status, found in results), results


def test_boxctl_ports(box):
    script = write_listener(box)
    bg_id = start_bg(box, f"exec python3 {script} 127.0.0.1")
    (pid, port), = listening(box, bg_id, 1)
    try:
        result = box.boxctl("ports")
        assert result.returncode == 0, result.stderr
        lines = result.stdout.decode().splitlines()
        assert lines[0].split() == ["PORT", "ADDRESS", "PID", "EXECID", "COMMAND"]
        mine, = [line for line in lines if line.split()[:4] == [str(port), "127.0.0.1",
                                                                 str(pid), bg_id]]
        assert mine.endswith(f"python3 {script} 127.0.0.1")
        result = box.boxctl("ports", "--json")
        assert result.returncode == 0, result.stderr
        entry, = [p for p in json.loads(result.stdout)["ports"] if p["port"] == port]
        assert entry["execId"] == bg_id
        assert box.boxctl("ports", "extra").returncode == 2
    finally:
        stop(box, bg_id)


def test_without_cgroups_the_shim_names_the_command(boxd_factory):
    """--cgroup off: a command's listeners, a daemon reparented to its shim
    included, are still named by its parents."""
    boxd = boxd_factory("--cgroup", "off")
    script = write_listener(boxd)
    bg_id = start_bg(boxd, f"python3 {script} 127.0.0.1 & "
                           f"(setsid python3 {script} 127.0.0.1 &); wait")
    found = listening(boxd, bg_id, 2)
    try:
        for pid, port in found:
            assert entry_of(boxd, port, pid)["execId"] == bg_id
    finally:
        for pid, _ in found:  # a setsid daemon leaves the group a stop signals
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        stop(boxd, bg_id)
        boxd.stop()
        cleanup(boxd)


# ---- containers, played without Docker ----

CONTAINER = """import os, socket, sys, time
with open(sys.argv[1] + "/cgroup.procs", "w") as f:
    f.write(str(os.getpid()))
s = socket.socket()
s.bind(("0.0.0.0", 0))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(600)
"""


@pytest.fixture
def fake_cgroups():
    """A cgroup v2 dir of the test's own, for stand-in containers: a process
    in .../docker-<64 hex>.scope is in a container as Docker's systemd
    driver makes them."""
    mount = cgroup2_mount()
    if os.geteuid() != 0 or not mount or not shutil.which("unshare"):
        pytest.skip("needs root, cgroup v2 and unshare")
    top = os.path.join(mount, f"boxd-test-ports-{random_tokens.token_hex(4)}")
    try:
        os.mkdir(top)
    except OSError as error:
        pytest.skip(f"cannot make a cgroup: {error}")
    processes = []

    def container(own_network):
        container_id = random_tokens.token_hex(32)
        directory = os.path.join(top, f"docker-{container_id}.scope")
        os.mkdir(directory)
        prefix = ["unshare", "-n"] if own_network else []
        process = subprocess.Popen([*prefix, sys.executable, "-c", CONTAINER, directory],
                                   stdout=subprocess.PIPE)
        processes.append(process)
        port = int(process.stdout.readline())
        return container_id, process.pid, port

    yield container
    for process in processes:
        process.kill()
        process.wait()
    for directory in [os.path.join(top, name) for name in os.listdir(top)] + [top]:
        if os.path.isdir(directory):
            wait_for(lambda: not os.path.isdir(directory) or _rmdir(directory),
                     what=f"{directory} to go")


def _rmdir(path):
    try:
        os.rmdir(path)
        return True
    except OSError:
        return False


def test_container_listeners(box, fake_cgroups):
    """A container with a network of its own: its listener (invisible to the
    box's own socket dump) is read from its namespace; one on the box's
    network is reached on its own port. No Docker here: no names."""
    inside_id, inside_pid, inside_port = fake_cgroups(own_network=True)
    host_id, host_pid, host_port = fake_cgroups(own_network=False)
    entry = entry_of(box, inside_port, inside_pid)
    assert entry["address"] == "0.0.0.0" and entry["execId"] is None
    assert "python" in entry["command"]
    assert entry["container"] == {"id": inside_id, "name": None, "hostPort": None}
    entry = entry_of(box, host_port, host_pid)
    assert entry["container"] == {"id": host_id, "name": None, "hostPort": host_port}


def test_docker_containers(box):
    """With a working Docker: a published container port names the
    container and its host port."""
    if not shutil.which("docker") or subprocess.run(["docker", "info"],
                                                    capture_output=True).returncode != 0:
        pytest.skip("no working Docker here")
    # An image already there (no pull in a test): BOXD_TEST_DOCKER_IMAGE, with python3.
    image = os.environ.get("BOXD_TEST_DOCKER_IMAGE", "python:3-alpine")
    name = f"boxd-ports-{random_tokens.token_hex(4)}"
    started = subprocess.run(["docker", "run", "-d", "--rm", "--pull", "never", "--name", name,
                              "-p", "127.0.0.1::8000", image, "python3", "-m", "http.server",
                              "8000"], capture_output=True, text=True)
    if started.returncode != 0:
        pytest.skip(f"cannot run {image}: {started.stderr.strip()}")
    container_id = started.stdout.strip()
    try:
        published = subprocess.run(["docker", "port", name, "8000/tcp"], capture_output=True,
                                   text=True).stdout.split()[0]
        host_port = int(published.rsplit(":", 1)[1])

        def inside():
            return [p for p in ports(box)
                    if p["container"] and p["container"]["id"] == container_id]
        entry, = wait_for(inside, what="the container's listener")
        assert entry["port"] == 8000 and "http.server" in entry["command"]
        assert entry["container"] == {"id": container_id, "name": name, "hostPort": host_port}
        # The published side, when Docker's userland proxy holds it, is the box's own.
        assert all(p["container"] is None for p in ports(box) if p["port"] == host_port)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
