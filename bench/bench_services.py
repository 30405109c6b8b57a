"""Services: a transfer and a connection through a service's name against
the same straight to the listener, and what forwarding costs boxd.

Runs in a network namespace of its own, wired as the box wires itself
(198.18.0.1/16 on lo, route_localnet), so boxd's nftables rules never touch
this machine's own network. Needs root, ip, nft and nsenter.

- box mode to a listener on 127.0.0.1: the kernel forwards (nftables DNAT);
- box mode to a listener on ::1 only: boxd's relay forwards (a thread);
- the vsock way in is measured in the booted box (tests/box, figures
  services-vsock-*), this machine has no vsock transport.

    BENCH_SERVICES_MIB=1024   size of each transfer (default 1024)
    BENCH_SERVICES_CONNECTS=2000  connections for the latency figures
"""
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time
import uuid

from benchlib import BenchBoxd, percentile, row, status_kib

MIB = int(os.environ.get("BENCH_SERVICES_MIB", "1024"))
CONNECTS = int(os.environ.get("BENCH_SERVICES_CONNECTS", "2000"))

# Both ends in one program run in the namespace: a server thread sending
# `size` bytes (or answering one small request per connection), and the
# client timing the transfer or the connections. Sockets at full speed:
# 1 MiB sends and recv_into, so Python's cost stays small beside the copy.
PEER = r"""
import json, socket, sys, threading, time
mode, family, bind_host, port, host, dport, amount = sys.argv[1:8]
port, dport, amount = int(port), int(dport), int(amount)
fam = socket.AF_INET6 if family == "6" else socket.AF_INET
s = socket.socket(fam)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if fam == socket.AF_INET6:
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s.bind((bind_host, port)); s.listen(512)
block = b"x" * (1 << 20)
def serve_bulk(c):
    left = amount
    while left > 0:
        n = c.send(block[: min(len(block), left)])
        left -= n
    c.close()
def serve_small(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        d = c.recv(4096)
        if not d:
            break
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    c.close()
def accept():
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve_bulk if mode == "bulk" else serve_small, args=(c,), daemon=True).start()
threading.Thread(target=accept, daemon=True).start()
print("READY", flush=True)
sys.stdin.readline()
result = {}
if mode == "bulk":
    c = socket.create_connection((host, dport))
    buf = bytearray(1 << 20); got = 0; t = time.perf_counter()
    while True:
        n = c.recv_into(buf)
        if not n: break
        got += n
    result = {"seconds": time.perf_counter() - t, "bytes": got}
elif mode == "connects":
    times = []
    for _ in range(amount):
        t = time.perf_counter()
        c = socket.create_connection((host, dport))
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        d = b""
        while not d.endswith(b"ok"):
            d += c.recv(4096)
        times.append(time.perf_counter() - t)
        c.close()
    result = {"times": times}
elif mode == "hold":
    conns = [socket.create_connection((host, dport)) for _ in range(amount)]
    for c in conns:
        c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    for c in conns:
        c.recv(4096)
    print(json.dumps({"held": len(conns)}), flush=True)
    sys.stdin.readline()
    t = time.perf_counter()
    for _ in range(20):
        for c in conns:
            c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        for c in conns:
            c.recv(4096)
    result = {"seconds": time.perf_counter() - t, "requests": 20 * len(conns)}
print(json.dumps(result), flush=True)
"""


class Namespace:
    def __init__(self):
        self.name = "boxdb-" + uuid.uuid4().hex[:8]
        subprocess.run(["ip", "netns", "add", self.name], check=True)
        self.prefix = ["nsenter", f"--net=/run/netns/{self.name}"]
        # boxd writes its names there, not into this machine's /etc/hosts.
        self.hosts = f"/tmp/{self.name}.hosts"
        subprocess.run([*self.prefix, "sh", "-c",
                        "ip link set lo up && ip address add 198.18.0.1/16 dev lo && "
                        "echo 1 > /proc/sys/net/ipv4/conf/all/route_localnet"], check=True)

    def close(self):
        subprocess.run(["ip", "netns", "delete", self.name], check=False)


def peer(ns, mode, family, bind_host, port, host, dport, amount, go=True):
    proc = subprocess.Popen([*ns.prefix, sys.executable, "-c", PEER, mode, family, bind_host,
                             str(port), host, str(dport), str(amount)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("READY")
    if go:
        proc.stdin.write("\n")
        proc.stdin.flush()
    return proc


def finish(proc):
    result = json.loads(proc.stdout.readline())
    proc.stdin.close()
    proc.wait()
    return result


def call(boxd, method, path, body):
    out = subprocess.run(["curl", "-s", "--unix-socket", boxd.socket, "-X", method,
                          "-H", "Content-Type: application/json", "-d", json.dumps(body),
                          f"http://boxd{path}"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def transfer(ns, family, bind_host, host, port):
    result = finish(peer(ns, "bulk", family, bind_host, 8080, host, port, MIB << 20))
    assert result["bytes"] == MIB << 20, result
    return (MIB / result["seconds"])


def median(values):
    return sorted(values)[len(values) // 2]


def throughput(ns, boxd, ips):
    """Three transfers each way, alternating, the median of each: a single
    pair on two shared cores swings by a quarter either way."""
    for label, family, bind, straight in (("127.0.0.1", "4", "127.0.0.1", "127.0.0.1"),
                                          ("::1 only (relay)", "6", "::1", "::1")):
        through, direct = [], []
        for _ in range(3):
            # The listener's kind decides the rule: let boxd see it first.
            server = peer(ns, "bulk", family, bind, 8080, ips["api"], 3000, MIB << 20, go=False)
            call(boxd, "POST", "/v1/services/api/wait", {"timeoutSec": 10})
            time.sleep(0.3)
            server.stdin.write("\n")
            server.stdin.flush()
            through.append(MIB / finish(server)["seconds"])
            direct.append(transfer(ns, family, bind, straight, 8080))
        a, b = median(through), median(direct)
        row(f"{MIB} MiB through name:port, {label}", f"{a:.0f} MiB/s", f"{b:.0f} MiB/s",
            f"{a / b:.2f}x straight")


def latency(ns, boxd, ips):
    for label, family, bind, straight in (("127.0.0.1", "4", "127.0.0.1", "127.0.0.1"),
                                          ("::1 only (relay)", "6", "::1", "::1")):
        server = peer(ns, "connects", family, bind, 8080, ips["api"], 3000, CONNECTS, go=False)
        call(boxd, "POST", "/v1/services/api/wait", {"timeoutSec": 10})
        time.sleep(0.3)
        server.stdin.write("\n")
        server.stdin.flush()
        through = finish(server)["times"]
        direct = finish(peer(ns, "connects", family, bind, 8080, straight, 8080, CONNECTS))["times"]
        for p in (50, 99):
            a, b = percentile(through, p) * 1e6, percentile(direct, p) * 1e6
            row(f"connect + request p{p}, {label}", f"{a:.0f} us", f"{b:.0f} us",
                f"+{a - b:.0f} us")


def cpu_ms(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def held(ns, boxd, ips):
    """100 connections held open through the relay (the kernel's cost boxd
    nothing), then 20 requests on each."""
    pid = boxd.proc.pid
    before_kib = status_kib(pid)
    server = peer(ns, "hold", "6", "::1", 8080, ips["api"], 3000, 100, go=False)
    call(boxd, "POST", "/v1/services/api/wait", {"timeoutSec": 10})
    time.sleep(0.3)
    server.stdin.write("\n")
    server.stdin.flush()
    assert json.loads(server.stdout.readline())["held"] == 100
    time.sleep(1)
    idle_cpu = cpu_ms(pid)
    time.sleep(2)
    idle_cpu = cpu_ms(pid) - idle_cpu
    open_kib = status_kib(pid)
    cpu = cpu_ms(pid)
    server.stdin.write("\n")
    server.stdin.flush()
    result = finish(server)
    busy_cpu = cpu_ms(pid) - cpu
    row("boxd RSS, 100 open relayed connections", f"{open_kib} KiB", f"{before_kib} KiB",
        f"+{(open_kib - before_kib) / 100:.1f} KiB each")
    row("boxd CPU, 100 idle relayed connections, 2 s", f"{idle_cpu:.0f} ms", "-", "")
    row("boxd CPU, 2000 requests over them", f"{busy_cpu:.0f} ms",
        f"{result['seconds'] * 1000:.0f} ms wall", f"{busy_cpu / result['requests'] * 1000:.0f} us/request")


def main():
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("ip", "nft", "nsenter", "curl")):
        row("services", "skipped", "-", "needs root, ip, nft, nsenter, curl")
        return
    ns = Namespace()
    try:
        with BenchBoxd("--hosts-file", ns.hosts, prefix=ns.prefix) as boxd:
            answer = call(boxd, "PUT", "/v1/services", {"services": [
                {"name": "api", "port": 3000, "targetPort": 8080}]})
            assert answer["wired"], answer
            ips = {e["name"]: e["ip"] for e in answer["services"]}
            throughput(ns, boxd, ips)
            latency(ns, boxd, ips)
            held(ns, boxd, ips)
    finally:
        ns.close()


if __name__ == "__main__":
    main()
