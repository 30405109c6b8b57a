"""A network namespace of a test's own, wired as the box wires itself
(boxd-dns.service: the services' range on lo, route_localnet), so that boxd
sets its nftables rules there and never on the machine running the tests."""
import ctypes
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid

import pytest

NET_TOOLS = ("ip", "nft", "nsenter")
LIBC = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def netns_usable():
    return os.geteuid() == 0 and all(shutil.which(tool) for tool in NET_TOOLS)


class Netns:
    def __init__(self):
        self.name = "boxdt-" + uuid.uuid4().hex[:8]
        subprocess.run(["ip", "netns", "add", self.name], check=True, capture_output=True)
        self.path = f"/run/netns/{self.name}"
        self.run("ip link set lo up && ip address add 198.18.0.1/16 dev lo && "
                 "echo 1 > /proc/sys/net/ipv4/conf/all/route_localnet")

    def prefix(self):
        return ["nsenter", f"--net={self.path}"]

    def run(self, script, check=True, **kwargs):
        return subprocess.run([*self.prefix(), "sh", "-c", script], check=check,
                              capture_output=True, **kwargs)

    def popen(self, argv, **kwargs):
        return subprocess.Popen([*self.prefix(), *argv], **kwargs)

    def delete(self):
        subprocess.run(["ip", "netns", "delete", self.name], check=False)

    def enter(self):
        """This thread into the namespace (for sockets the test makes itself)."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            # os.setns is Python 3.12's; Debian 12 has 3.11.
            if LIBC.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns")
        finally:
            os.close(fd)


@pytest.fixture
def netns():
    if not netns_usable():
        pytest.skip("needs root with ip, nft and nsenter (packaging/install-deps)")
    try:
        namespace = Netns()
    except subprocess.CalledProcessError as error:
        pytest.skip(f"cannot make a network namespace here: {error.stderr or error}")
    yield namespace
    namespace.delete()


# A listener program run in the namespace: serves `size` bytes of a
# repeating pattern (or "who" for a short answer) to each connection, on the
# address and port given; prints READY once it listens.
SERVER = r"""
import socket, sys, threading, time
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(family)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if family == socket.AF_INET6 and sys.argv[1] == "::1":
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(64)
print("READY", time.time(), flush=True)
who = sys.argv[3].encode()
size = int(sys.argv[4])
pace = float(sys.argv[5]) if len(sys.argv) > 5 else 0
def serve(c):
    try:
        c.recv(65536)
        if size == 0:
            c.sendall(who + b"\n")
        else:
            block = (who + b"-") * (65536 // (len(who) + 1))
            sent = 0
            while sent < size:
                piece = block[: min(len(block), size - sent)]
                c.sendall(piece)
                sent += len(piece)
                if pace:
                    time.sleep(pace)
    except OSError:
        pass
    finally:
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


class Listener:
    def __init__(self, namespace, address, port, who, size=0, pace=0.0, delay=0.0):
        script = SERVER if not delay else f"import time; time.sleep({delay})\n" + SERVER
        self.proc = namespace.popen(["python3", "-c", script, address, str(port), who,
                                     str(size), str(pace)],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.ready_at = None
        if not delay:
            self.wait_ready()

    def wait_ready(self):
        line = self.proc.stdout.readline()
        assert line.startswith("READY"), line
        self.ready_at = float(line.split()[1])
        return self.ready_at

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def fetch(namespace, host, port, timeout=10):
    """What a connection to host:port answers, from inside the namespace."""
    result = namespace.run(
        "python3 -c 'import socket,sys; c=socket.create_connection((sys.argv[1], int(sys.argv[2])), "
        f"timeout={timeout}); c.sendall(b\"hi\"); d=b\"\"\n"
        "while True:\n"
        "    b=c.recv(65536)\n"
        "    if not b: break\n"
        "    d+=b\n"
        "sys.stdout.write(d.decode())' " + f"{host} {port}", check=False, timeout=timeout + 5)
    return result.stdout.decode().strip() if result.returncode == 0 else \
        f"failed: {result.stderr.decode().strip()[-200:]}"


class Download(threading.Thread):
    """A long download through host:port, in the namespace, counting bytes
    and checking each block's pattern."""

    def __init__(self, namespace, host, port):
        super().__init__(daemon=True)
        self.namespace, self.host, self.port = namespace, host, port
        self.received = 0
        self.senders = set()
        self.error = None

    def run(self):
        try:
            self.namespace.enter()
            c = socket.create_connection((self.host, self.port), timeout=30)
            c.sendall(b"hi")
            data = b""
            while True:
                block = c.recv(1 << 20)
                if not block:
                    break
                self.received += len(block)
                data = (data + block)[-4096:]
                for word in data.split(b"-")[1:-1]:
                    self.senders.add(word.decode(errors="replace"))
            c.close()
        except Exception as error:  # noqa: BLE001 (reported by the test)
            self.error = error


def wait_listening(instance, name, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, table = instance.call("GET", "/v1/services")
        entry = next((e for e in table["services"] if e["name"] == name), None)
        if entry and entry["listening"]:
            return entry
        time.sleep(0.05)
    raise AssertionError(f"{name} never listened: {table}")
