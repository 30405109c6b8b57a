"""Services in the booted box (docs/services.md): names that resolve on the
box and in Docker's containers (default bridge and a user-defined network,
as compose makes), box and external forwarding, switching under a running
download, the way in over vsock, readiness, ports, and a crash of boxd."""
import hashlib
import os
import socket
import subprocess
import threading
import time

from boxtest import BUILD_IMAGE, IMAGE, api, figure, health, run, sh, unit, wait_until

VSOCK_LOCAL = 1  # the loopback transport's peers are CID 1

TABLE = {"services": [
    {"name": "api", "port": 3000, "targetPort": 8080, "mode": "box"},      # 127.0.0.1
    {"name": "six", "port": 3001, "targetPort": 8081, "mode": "box"},      # ::1 only
    {"name": "any", "port": 3002, "targetPort": 8082, "mode": "box"},      # 0.0.0.0
    {"name": "pub", "port": 3003, "targetPort": 8083, "mode": "box"},      # a container's -p
    {"name": "billing", "port": 443, "mode": "external", "address": "10.20.0.5:8443"},
    {"name": "db.internal", "port": 5432, "mode": "external", "address": f"vsock:{VSOCK_LOCAL}:15432"},
]}


def bg(cmd):
    return api("POST", "/v1/exec", {"cmd": cmd, "background": True})["bgId"]


def box(cmd, timeout=120):
    r = run(cmd, timeout=timeout)
    assert r["exitCode"] == 0, (cmd, r)
    return r["stdout"]


def in_container(cmd, network="bridge", timeout=120):
    return box(f"docker run --rm --network {network} {IMAGE} {cmd}", timeout)


def serve_vsock(port, answer):
    """A listener on vsock (the control plane's side of a vsock external)."""
    s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    s.bind((socket.VMADDR_CID_ANY, port))
    s.listen(16)

    def loop():
        while True:
            c, _ = s.accept()
            c.recv(4096)
            c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(answer), answer))
            c.close()
    threading.Thread(target=loop, daemon=True).start()
    return s


def setup():
    box(BUILD_IMAGE, 300)
    box("mkdir -p /srv/api /srv/any /srv/far && echo api-page > /srv/api/index.html && "
        "echo any-page > /srv/any/index.html && echo far-page > /srv/far/index.html && "
        "ip address replace 10.20.0.5/32 dev lo")
    bg("exec busybox httpd -f -p 127.0.0.1:8080 -h /srv/api")
    bg("exec python3 -m http.server 8081 --bind ::1 --directory /srv/api")
    bg("exec busybox httpd -f -p 0.0.0.0:8082 -h /srv/any")
    bg("exec busybox httpd -f -p 10.20.0.5:8443 -h /srv/far")
    box(f"docker rm -f boxtest-pub >/dev/null 2>&1; echo pub-page > /srv/pub.html && "
        f"docker run -d --name boxtest-pub -p 8083:80 -v /srv/pub.html:/www/index.html:ro "
        f"{IMAGE} httpd -f -p 80 -h /www")


_state = {}


def ready():
    if not _state:
        setup()
        _state["vsock"] = serve_vsock(15432, b"db-page\n")
        answer = api("PUT", "/v1/services", TABLE)
        assert answer["wired"] is True, answer
        _state["ips"] = {e["name"]: e["ip"] for e in answer["services"]}
        for name in ("api", "six", "any", "pub"):
            api("POST", f"/v1/services/{name}/wait", {"timeoutSec": 30})
    return _state["ips"]


def check_the_resolver_and_rules_are_up():
    for name in ("boxd-dns.service", "docker.service"):
        assert unit(name, "ActiveState")["ActiveState"] == "active", name
    assert "198.18.0.1/16" in sh("ip -4 address show dev lo").stdout
    assert "--dns 198.18.0.1" in sh("ps -eo args | grep [d]ockerd").stdout
    ready()
    rules = sh("nft list table ip boxd")
    assert rules.returncode == 0 and "dnat to 127.0.0.1:8080" in rules.stdout, rules
    return "dnsmasq on 198.18.0.1, dockerd --dns, table ip boxd"


def check_names_resolve_on_the_box_and_in_containers():
    ips = ready()
    assert f"{ips['api']}\tapi" in open("/etc/hosts").read()
    assert ips["api"] in box("getent hosts api")
    bridge = in_container("nslookup api 198.18.0.1")
    assert ips["api"] in bridge, bridge
    assert ips["db.internal"] in in_container("nslookup db.internal")
    box("docker network rm boxtest-net >/dev/null 2>&1; docker network create boxtest-net")
    box(f"docker rm -f web >/dev/null 2>&1; docker run -d --name web --network boxtest-net {IMAGE} sleep 600")
    # Docker's embedded resolver (127.0.0.11) forwards to dnsmasq...
    named = in_container("nslookup api", network="boxtest-net")
    assert ips["api"] in named and "127.0.0.11" in named, named
    # ...and the network's own names stay Docker's.
    web = in_container("nslookup web", network="boxtest-net")
    assert "198.18." not in web.split("Name:")[-1], web
    return "api resolves on the box, on the default bridge and on a user network"


def check_box_mode_reaches_every_kind_of_listener():
    ready()
    expected = {"api:3000": "api-page", "six:3001": "api-page", "any:3002": "any-page",
                "pub:3003": "pub-page"}
    for where, page in expected.items():
        got = box(f"busybox wget -qO- http://{where}/index.html")
        assert got.strip() == page, (where, got)
        for network in ("bridge", "boxtest-net"):
            got = in_container(f"wget -qO- http://{where}/index.html", network=network)
            assert got.strip() == page, (where, network, got)
    return "127.0.0.1, ::1, 0.0.0.0 and a published port, from the box and two networks"


def check_external_mode_reaches_the_network_and_vsock():
    ready()
    assert box("busybox wget -qO- http://billing:443/index.html").strip() == "far-page"
    assert in_container("wget -qO- http://billing:443/index.html").strip() == "far-page"
    assert box("busybox wget -qO- http://db.internal:5432/").strip() == "db-page"
    assert in_container("wget -qO- http://db.internal:5432/",
                        network="boxtest-net").strip() == "db-page"
    entry = api("POST", "/v1/services/db.internal/wait", {"timeoutSec": 5})
    assert entry["listening"] is True, entry
    return "10.20.0.5:8443 and vsock:1:15432, from the box and containers"


class SlowDownload(threading.Thread):
    def __init__(self, host, port, path):
        super().__init__(daemon=True)
        self.host, self.port, self.path = host, port, path
        self.digest, self.size, self.error = hashlib.sha256(), 0, None

    def run(self):
        try:
            c = socket.create_connection((self.host, self.port), timeout=60)
            c.sendall(f"GET {self.path} HTTP/1.0\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                head += c.recv(1)
            while True:
                block = c.recv(65536)
                if not block:
                    break
                self.digest.update(block)
                self.size += len(block)
                time.sleep(0.002)
        except Exception as error:  # noqa: BLE001 - reported by the check
            self.error = error


def check_switching_keeps_a_running_download_intact():
    ips = ready()
    box("head -c 200000000 /dev/urandom > /srv/api/big.bin")
    want = hashlib.sha256(open("/srv/api/big.bin", "rb").read()).hexdigest()
    download = SlowDownload("api", 3000, "/big.bin")
    download.start()
    wait_until("download under way", lambda: download.size > 1 << 20, 30, 0.05)
    api("PUT", "/v1/services/api", {"port": 3000, "mode": "external", "address": "10.20.0.5:8443"})
    assert box("busybox wget -qO- http://api:3000/index.html").strip() == "far-page"
    assert in_container("wget -qO- http://api:3000/index.html").strip() == "far-page"
    back = api("PUT", "/v1/services/api", {"port": 3000, "targetPort": 8080, "mode": "box"})
    assert next(e for e in back["services"] if e["name"] == "api")["ip"] == ips["api"]
    assert box("busybox wget -qO- http://api:3000/index.html").strip() == "api-page"
    assert download.is_alive(), "the download ended before the switches were done"
    download.join(600)
    os.unlink("/srv/api/big.bin")
    assert download.error is None, download.error
    assert download.digest.hexdigest() == want and download.size == 200000000
    return "200 MB download intact across box -> external -> box"


WS_SERVER = r"""
import base64, hashlib, socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8085)); s.listen(8)
while True:
    c, _ = s.accept()
    head = b""
    while b"\r\n\r\n" not in head:
        head += c.recv(1024)
    key = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key")][0]
    accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    frame = c.recv(1024)
    length = frame[1] & 0x7f
    mask, data = frame[2:6], frame[6:6 + length]
    text = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
    c.sendall(bytes([0x81, len(text) + 5]) + b"echo:" + text)
    c.close()
"""


def vsock_connect(port):
    c = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    c.settimeout(20)
    c.connect((VSOCK_LOCAL, port))
    return c


def check_the_way_in_over_vsock_http_and_websocket():
    ready()
    with open("/tmp/ws.py", "w") as f:
        f.write(WS_SERVER)
    bg("exec python3 /tmp/ws.py")
    api("PUT", "/v1/services/ws", {"port": 3005, "targetPort": 8085})
    api("POST", "/v1/services/ws/wait", {"timeoutSec": 30})
    before = health()["activity"].get("lastIngressAt", 0)
    c = vsock_connect(20000 + 3000)
    # An open connection through the way in is use of the box (activity).
    wait_until("ingress in activity.reasons",
               lambda: "ingress" in health()["activity"]["reasons"], 5, 0.05)
    c.sendall(b"GET /index.html HTTP/1.0\r\n\r\n")
    answer = b""
    while True:
        block = c.recv(65536)
        if not block:
            break
        answer += block
    assert answer.startswith(b"HTTP/1.") and answer.endswith(b"api-page\n"), answer
    c.close()
    wait_until("ingress gone from activity.reasons",
               lambda: "ingress" not in health()["activity"]["reasons"], 1, 0.05)
    after = health()["activity"]["lastIngressAt"]
    assert after > before, (before, after)
    c = vsock_connect(20000 + 3005)
    c.sendall(b"GET / HTTP/1.1\r\nHost: ws\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        head += c.recv(1)
    assert b" 101 " in head and b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in head, head
    mask = b"\x01\x02\x03\x04"
    c.sendall(bytes([0x81, 0x80 | 5]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(b"hello")))
    frame = c.recv(1024)
    assert frame[2:] == b"echo:hello", frame
    assert health()["activity"]["lastIngressAt"] >= after
    return ("HTTP and a WebSocket upgrade through vsock 20000+port; `ingress` in "
            "activity.reasons while a connection was open, gone within a second of its end")


BULK_SERVER = r"""
import socket, sys, threading
size = int(sys.argv[1])
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8087)); s.listen(16)
block = b"x" * (1 << 20)
def serve(c):
    c.recv(16)
    left = size
    while left > 0:
        left -= c.send(block[: min(len(block), left)])
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


def timed_read(c):
    c.sendall(b"go")
    buf, got, started = bytearray(1 << 20), 0, time.perf_counter()
    while True:
        n = c.recv_into(buf)
        if not n:
            break
        got += n
    return got, time.perf_counter() - started


def check_the_way_in_against_straight():
    """Figures: a transfer and a connection through vsock 20000+port
    against the same straight to the listener, in this box (TCG: slow, the
    ratio is what counts)."""
    ready()
    size = 256 << 20
    with open("/tmp/bulk.py", "w") as f:
        f.write(BULK_SERVER)
    bg(f"exec python3 /tmp/bulk.py {size}")
    api("PUT", "/v1/services/bulk", {"port": 3007, "targetPort": 8087})
    api("POST", "/v1/services/bulk/wait", {"timeoutSec": 30})
    got, through = timed_read(vsock_connect(20000 + 3007))
    assert got == size, got
    got, straight = timed_read(socket.create_connection(("127.0.0.1", 8087)))
    assert got == size
    ratio = straight / through
    figure("services-vsock-mib-s", f"{256 / through:.0f}")
    figure("services-straight-mib-s", f"{256 / straight:.0f}")
    figure("services-vsock-ratio", f"{ratio:.2f}")
    times = {"vsock": [], "straight": []}
    for _ in range(200):
        for kind in times:
            t = time.perf_counter()
            c = vsock_connect(20000 + 3000) if kind == "vsock" else \
                socket.create_connection(("127.0.0.1", 8080))
            c.sendall(b"GET /index.html HTTP/1.0\r\n\r\n")
            while c.recv(65536):
                pass
            c.close()
            times[kind].append(time.perf_counter() - t)
    p50 = {k: sorted(v)[len(v) // 2] * 1000 for k, v in times.items()}
    p99 = {k: sorted(v)[int(len(v) * 0.99)] * 1000 for k, v in times.items()}
    for kind in times:
        figure(f"services-{kind}-request-p50-ms", f"{p50[kind]:.2f}")
        figure(f"services-{kind}-request-p99-ms", f"{p99[kind]:.2f}")
    return (f"256 MiB: vsock way in {256 / through:.0f} MiB/s, straight {256 / straight:.0f} MiB/s "
            f"({ratio:.2f}x); request p50 {p50['vsock']:.1f} vs {p50['straight']:.1f} ms")


def check_wait_answers_within_250ms_of_the_listener():
    ready()
    api("PUT", "/v1/services/late", {"port": 3006, "targetPort": 8086})
    bg("sleep 1; exec python3 -c 'import socket,time; s=socket.socket(); "
       "s.bind((\"127.0.0.1\", 8086)); s.listen(); "
       "open(\"/tmp/late-at\", \"w\").write(repr(time.time())); time.sleep(600)'")
    entry = api("POST", "/v1/services/late/wait", {"timeoutSec": 30})
    answered = time.time()
    assert entry["listening"] is True, entry
    # The listener writes its time just after it listens: wait for the
    # whole of it, not the file's creation.
    def written():
        try:
            return float(open("/tmp/late-at").read())
        except (OSError, ValueError):
            return None
    delay = answered - wait_until("listener time", written, 5, 0.05)
    figure("services-wait-delay-ms", f"{delay * 1000:.0f}")
    assert delay < 0.25, delay
    return f"answered {delay * 1000:.0f} ms after the listener appeared"


def check_ports_name_jobs_and_containers():
    ready()
    ports = api("GET", "/v1/ports")["ports"]
    api_port = next(p for p in ports if p["port"] == 8080)
    assert api_port["execId"] and api_port["execId"].startswith("b_"), api_port
    assert "httpd" in api_port["command"], api_port
    inside = [p for p in ports if p.get("container") and p["container"].get("name") == "boxtest-pub"]
    assert inside and inside[0]["port"] == 80 and inside[0]["container"]["hostPort"] == 8083, ports
    return f"{len(ports)} listeners; boxtest-pub's port 80 -> 8083"


def check_a_crash_of_boxd_keeps_names_and_forwarding():
    ips = ready()
    pid = int(unit("boxd.service", "MainPID")["MainPID"])
    download = SlowDownload("any", 3002, "/index.html")
    subprocess.run(["systemctl", "kill", "-s", "SIGKILL", "boxd.service"], check=True)
    # With boxd gone the kernel still forwards.
    got = subprocess.run(["busybox", "wget", "-qO-", "http://api:3000/index.html"],
                         capture_output=True, text=True, timeout=30)
    assert got.stdout.strip() == "api-page", got
    download.run()
    assert download.error is None and download.size > 0

    def back():
        try:
            new = int(unit("boxd.service", "MainPID")["MainPID"])
            return new not in (0, pid) and health(timeout=5)["ok"]
        except Exception:  # noqa: BLE001 - not up yet
            return False
    wait_until("boxd back", back, 60, 0.2)
    table = {e["name"]: e["ip"] for e in api("GET", "/v1/services")["services"]}
    assert all(table[name] == ip for name, ip in ips.items()), (table, ips)
    assert box("busybox wget -qO- http://six:3001/index.html").strip() == "api-page"
    assert in_container("wget -qO- http://api:3000/index.html").strip() == "api-page"
    return "forwarded while boxd was down; table and names kept"


def check_bad_tables_change_nothing():
    ready()
    before = api("GET", "/v1/services")
    for body in ({"services": [{"name": "Bad", "port": 1}]},
                 {"services": [{"name": "a", "port": 70000}]},
                 {"services": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]},
                 {"services": [{"name": "a", "port": 1, "mode": "external", "address": "x:y"}]}):
        api("PUT", "/v1/services", body, expect=400)
    assert api("GET", "/v1/services") == before
    rules = sh("nft list table ip boxd").stdout
    assert "dnat to 127.0.0.1:8080" in rules
    return "400s, table and rules unchanged"


def check_cleanup():
    api("PUT", "/v1/services", {"services": []})
    box("docker rm -f boxtest-pub web >/dev/null 2>&1; docker network rm boxtest-net >/dev/null 2>&1; true")
    assert "dnat to" not in sh("nft list table ip boxd").stdout
    return "table emptied"
