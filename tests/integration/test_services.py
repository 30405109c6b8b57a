"""The services table (API.md "Services"): checking what callers send, the
names' addresses and files, and the forwarding itself, in a network
namespace of each test's own wired as the box is (services_helpers.py)."""
import json
import os
import socket
import subprocess
import time

import pytest

from conftest import BOXCTL, BOXD, assert_error, wait_for
from services_helpers import Download, Listener, fetch, netns, wait_listening  # noqa: F401

API = {"services": [{"name": "api", "port": 3000, "targetPort": 8080, "mode": "box"},
                    {"name": "billing", "port": 443, "mode": "external",
                     "address": "10.20.0.5:8443"},
                    {"name": "db", "port": 5432, "mode": "external",
                     "address": "vsock:2:15432"}]}


@pytest.fixture
def plain(boxd_factory, tmp_path):
    """boxd on this machine's own network, with a hosts file of its own."""
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1\tlocalhost\n")
    instance = boxd_factory("--hosts-file", str(hosts))
    instance.hosts = hosts
    return instance


@pytest.fixture
def wired(boxd_factory, netns, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1\tlocalhost\n")
    instance = boxd_factory("--hosts-file", str(hosts), start=False)
    instance.wrapper = netns.prefix()
    instance.start()
    instance.hosts, instance.netns = hosts, netns
    return instance


def table(instance):
    status, body = instance.call("GET", "/v1/services")
    assert status == 200, body
    return {entry["name"]: entry for entry in body["services"]}


# ---- what callers send ----

BAD = [
    ({"services": [{"name": "Api", "port": 80}]}, "services[0].name"),
    ({"services": [{"name": "a..b", "port": 80}]}, "services[0].name"),
    ({"services": [{"name": "-a", "port": 80}]}, "services[0].name"),
    ({"services": [{"name": "a" * 64, "port": 80}]}, "services[0].name"),
    ({"services": [{"name": "a_b", "port": 80}]}, "services[0].name"),
    ({"services": [{"name": "a", "port": 0}]}, "services[0].port"),
    ({"services": [{"name": "a", "port": 65536}]}, "services[0].port"),
    ({"services": [{"name": "a", "port": "80"}]}, "services[0].port"),
    ({"services": [{"name": "a", "port": 80.5}]}, "services[0].port"),
    ({"services": [{"name": "a", "port": 80, "targetPort": -1}]}, "services[0].targetPort"),
    ({"services": [{"name": "a", "port": 80}, {"name": "a", "port": 81}]}, "services[1].name"),
    ({"services": [{"name": "a", "port": 80}, {"name": "b", "port": 80}]}, "services[1].port"),
    ({"services": [{"name": "a", "port": 80, "mode": "external"}]}, "services[0].address"),
    ({"services": [{"name": "a", "port": 80, "mode": "external", "address": "example.com:80"}]},
     "services[0].address"),
    ({"services": [{"name": "a", "port": 80, "mode": "external", "address": "1.2.3.4"}]},
     "services[0].address"),
    ({"services": [{"name": "a", "port": 80, "mode": "external", "address": "vsock:x:1"}]},
     "services[0].address"),
    ({"services": [{"name": "a", "port": 80, "mode": "lan"}]}, "services[0].mode"),
    ({"services": {"name": "a"}}, "services"),
]


@pytest.mark.parametrize("body,field", BAD, ids=[field + str(i) for i, (_, field) in enumerate(BAD)])
def test_bad_tables_are_refused_naming_the_field(plain, body, field):
    assert plain.call("PUT", "/v1/services", API)[0] == 200
    before = plain.call("GET", "/v1/services")[1]
    status, answer = plain.call("PUT", "/v1/services", body)
    assert_error((status, answer), 400, "bad_request")
    assert field in answer["error"]["message"], answer
    assert plain.call("GET", "/v1/services")[1] == before


def test_a_put_of_one_entry_checks_it_against_the_table(plain):
    assert plain.call("PUT", "/v1/services", API)[0] == 200
    # A second box service on api's port: the way in would be ambiguous.
    status, answer = plain.call("PUT", "/v1/services/web", {"port": 3000})
    assert_error((status, answer), 400, "bad_request")
    assert "port" in answer["error"]["message"]
    assert_error(plain.call("PUT", "/v1/services/web", {"name": "other", "port": 1}), 400,
                 "bad_request")
    assert_error(plain.call("PUT", "/v1/services/Web", {"port": 1}), 400, "bad_request")
    assert_error(plain.call("DELETE", "/v1/services/nothing"), 404, "not_found")
    assert_error(plain.call("POST", "/v1/services/nothing/wait", {}), 404, "not_found")
    assert_error(plain.call("POST", "/v1/services/api/wait", {"timeoutSec": -1}), 400,
                 "bad_request")
    assert set(table(plain)) == {"api", "billing", "db"}


# ---- the table, its addresses and its files ----

def test_names_get_addresses_of_their_own_kept_while_named(plain):
    status, answer = plain.call("PUT", "/v1/services", API)
    assert status == 200, answer
    assert answer["wired"] is False and answer["notWired"]
    entries = {e["name"]: e for e in answer["services"]}
    addresses = {e["ip"] for e in entries.values()}
    assert len(addresses) == 3 and all(a.startswith("198.18.") for a in addresses)
    assert "198.18.0.1" not in addresses  # the resolver's
    assert entries["billing"]["targetPort"] == 443 and entries["api"]["targetPort"] == 8080
    # Replaced with api kept and billing gone: api keeps its address.
    status, answer = plain.call("PUT", "/v1/services", {"services": [
        {"name": "web", "port": 80}, {"name": "api", "port": 3000, "targetPort": 9090}]})
    assert status == 200
    now = {e["name"]: e for e in answer["services"]}
    assert now["api"]["ip"] == entries["api"]["ip"] and now["api"]["targetPort"] == 9090
    assert now["web"]["ip"] != now["api"]["ip"]
    # PUT one switches in place; DELETE answers the whole table.
    status, answer = plain.call("PUT", "/v1/services/api",
                                {"port": 3000, "mode": "external", "address": "[::1]:9"})
    assert status == 200 and [e["name"] for e in answer["services"]] == ["web", "api"]
    assert answer["services"][1]["ip"] == entries["api"]["ip"]
    status, answer = plain.call("DELETE", "/v1/services/web")
    assert status == 200 and [e["name"] for e in answer["services"]] == ["api"]


def test_names_are_written_for_the_box_and_for_the_resolver(plain):
    plain.hosts.write_text("127.0.0.1\tlocalhost\n10.0.0.9\tmine\n")
    assert plain.call("POST", "/v1/init", {"hosts": {"wired": "10.1.1.1"}})[0] == 200
    answer = plain.call("PUT", "/v1/services", API)[1]
    ips = {e["name"]: e["ip"] for e in answer["services"]}
    text = plain.hosts.read_text()
    for name, ip in ips.items():
        assert f"{ip}\t{name}\n" in text
    # The other lines, and init's block, stay.
    assert "10.0.0.9\tmine" in text and "10.1.1.1\twired" in text
    dns = open(os.path.join(plain.run_dir, "dns", "services")).read()
    assert sorted(dns.splitlines()) == sorted(f"{ip}\t{name}" for name, ip in ips.items())
    # init's hosts replaced: the services' block stays, and the other way round.
    assert plain.call("POST", "/v1/init", {"hosts": {}})[0] == 200
    assert f"{ips['api']}\tapi" in plain.hosts.read_text()
    assert plain.call("PUT", "/v1/services", {"services": []})[0] == 200
    text = plain.hosts.read_text()
    assert "api" not in text and "10.0.0.9\tmine" in text and "boxd services" not in text
    assert open(os.path.join(plain.run_dir, "dns", "services")).read() == ""


def test_the_table_survives_a_crash_of_boxd(plain):
    answer = plain.call("PUT", "/v1/services", API)[1]
    plain.kill()
    plain.start()
    assert plain.call("GET", "/v1/services")[1]["services"] == answer["services"]


def test_commands_may_read_the_table_but_not_change_it(plain):
    assert plain.call("PUT", "/v1/services", API)[0] == 200
    script = (f"{BOXCTL} --socket {plain.socket} services ls; echo rc=$?; "
              f"{BOXCTL} --socket {plain.socket} services set evil 80 --external 1.2.3.4:80;"
              " echo rc=$?")
    status, result = plain.call("POST", "/v1/exec", {"cmd": script, "timeoutSec": 30})
    assert status == 200, result
    assert "billing" in result["stdout"] and "rc=0" in result["stdout"]
    assert "rc=1" in result["stdout"] and "forbidden" in result["stderr"].lower() + \
        result["stdout"].lower(), result
    assert "evil" not in table(plain)


def test_boxctl_services(plain):
    result = plain.boxctl("services", "set", "api", "3000", "8080")
    assert result.returncode == 0, result.stderr
    assert b"api" in result.stdout and b"198.18." in result.stdout
    result = plain.boxctl("services", "set", "db", "5432", "--external", "vsock:2:15432")
    assert result.returncode == 0, result.stderr
    listing = plain.boxctl("services").stdout.decode()
    assert "vsock:2:15432" in listing and "-> :8080" in listing
    assert plain.boxctl("services", "set", "x", "99999").returncode == 2
    result = plain.boxctl("services", "wait", "api", "--timeout", "0.2")
    assert result.returncode == 0 and b"timed out" in result.stdout
    assert plain.boxctl("services", "rm", "api").returncode == 0
    assert "api" not in plain.boxctl("--json", "services").stdout.decode()


# ---- forwarding (a namespace of the test's own) ----

def put(instance, *entries):
    status, answer = instance.call("PUT", "/v1/services", {"services": list(entries)})
    assert status == 200, answer
    assert answer["wired"] is True, answer
    return {e["name"]: e for e in answer["services"]}


def test_box_mode_reaches_listeners_on_every_loopback_and_any(wired):
    ns = wired.netns
    listeners = [Listener(ns, "127.0.0.1", 8081, "v4"), Listener(ns, "::1", 8082, "v6"),
                 Listener(ns, "0.0.0.0", 8083, "any"), Listener(ns, "::", 8084, "dual")]
    try:
        entries = put(wired, {"name": "v4", "port": 3001, "targetPort": 8081},
                      {"name": "v6", "port": 3002, "targetPort": 8082},
                      {"name": "any", "port": 3003, "targetPort": 8083},
                      {"name": "dual", "port": 3004, "targetPort": 8084})
        for name, port in [("v4", 3001), ("v6", 3002), ("any", 3003), ("dual", 3004)]:
            wait_listening(wired, name)
            assert fetch(ns, entries[name]["ip"], port) == name, name
        assert table(wired)["v6"]["listener"] == "[::1]:8082"
        assert table(wired)["v4"]["listener"] == "127.0.0.1:8081"
        # A port no entry forwards is refused at once, not left to time out.
        assert "refused" in fetch(ns, entries["v4"]["ip"], 3999).lower()
    finally:
        for listener in listeners:
            listener.stop()


def test_external_mode_reaches_the_address(wired):
    ns = wired.netns
    ns.run("ip address add 10.20.0.5/32 dev lo")
    listeners = [Listener(ns, "10.20.0.5", 8443, "far"), Listener(ns, "::1", 9443, "far6")]
    try:
        entries = put(wired, {"name": "billing", "port": 443, "mode": "external",
                              "address": "10.20.0.5:8443"},
                      {"name": "six", "port": 80, "mode": "external", "address": "[::1]:9443"})
        assert fetch(ns, entries["billing"]["ip"], 443) == "far"
        assert fetch(ns, entries["six"]["ip"], 80) == "far6"
        status, entry = wired.call("POST", "/v1/services/billing/wait", {"timeoutSec": 5})
        assert status == 200 and entry["listening"] is True and "waitTimedOut" not in entry
    finally:
        for listener in listeners:
            listener.stop()


def test_switching_keeps_open_connections_and_moves_new_ones(wired):
    ns = wired.netns
    ns.run("ip address add 10.20.0.6/32 dev lo")
    # 64 MiB at a pace: the download runs through both switches.
    box = Listener(ns, "127.0.0.1", 8090, "boxside", size=64 << 20, pace=0.004)
    far = Listener(ns, "10.20.0.6", 8091, "farside", size=0)
    try:
        ip = put(wired, {"name": "api", "port": 3000, "targetPort": 8090})["api"]["ip"]
        download = Download(ns, ip, 3000)
        download.start()
        wait_for(lambda: download.received > 1 << 20 or download.error,
                 what="the download to start")
        assert download.error is None, download.error
        switched = put(wired, {"name": "api", "port": 3000, "mode": "external",
                               "address": "10.20.0.6:8091"})
        assert switched["api"]["ip"] == ip  # no cached answer points the old way
        assert fetch(ns, ip, 3000) == "farside"
        put(wired, {"name": "api", "port": 3000, "targetPort": 8090})
        assert download.is_alive(), "the download ended early"
        download.join(120)
        assert download.error is None and download.received == 64 << 20
        assert download.senders == {"boxside"}
    finally:
        box.stop()
        far.stop()


def test_wait_answers_soon_after_the_listener_appears(wired):
    ns = wired.netns
    put(wired, {"name": "late", "port": 3000, "targetPort": 8095})
    listener = Listener(ns, "127.0.0.1", 8095, "late", delay=1.0)
    try:
        status, entry = wired.call("POST", "/v1/services/late/wait", {"timeoutSec": 10})
        answered = time.time()
        listener.wait_ready()
        assert status == 200 and entry["listening"] is True, entry
        assert answered - listener.ready_at < 0.25, answered - listener.ready_at
        status, entry = wired.call("POST", "/v1/services/late/wait", {"timeoutSec": 10})
        assert status == 200 and entry["listening"]
    finally:
        listener.stop()
    started = time.monotonic()
    status, entry = wired.call("POST", "/v1/services/late/wait", {"timeoutSec": 0.5})
    # The listener is gone: no answer until the time is up.
    assert status == 200 and entry.get("waitTimedOut") is True and not entry["listening"]
    assert 0.4 < time.monotonic() - started < 2


def test_the_service_event_reaches_the_report_peer(boxd_factory, netns, tmp_path):
    path = str(tmp_path / "report.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(4)
    instance = boxd_factory("--report", f"unix:{path}", "--report-interval", "3600",
                            start=False)
    instance.wrapper = netns.prefix()
    instance.start()
    server.settimeout(10)
    conn, _ = server.accept()
    conn.settimeout(10)
    put(instance, {"name": "api", "port": 3000, "targetPort": 8096})
    listener = Listener(netns, "127.0.0.1", 8096, "api")
    events, data = [], b""
    try:
        while not any(e.get("event") == "service" for e in events):
            data += conn.recv(65536)
            *lines, data = data.split(b"\n")
            events += [json.loads(line) for line in lines]
        heard = time.time()
        service = next(e for e in events if e.get("event") == "service")
        assert service == {"event": "service", "name": "api", "listening": True}
        assert heard - listener.ready_at < 0.25
    finally:
        listener.stop()
    while not any(e.get("event") == "service" and not e["listening"] for e in events):
        data += conn.recv(65536)
        *lines, data = data.split(b"\n")
        events += [json.loads(line) for line in lines]


def test_a_crash_of_boxd_keeps_forwarding(wired):
    ns = wired.netns
    listener = Listener(ns, "127.0.0.1", 8097, "kept", size=32 << 20, pace=0.002)
    six = Listener(ns, "::1", 8098, "six")
    try:
        entries = put(wired, {"name": "api", "port": 3000, "targetPort": 8097},
                      {"name": "six", "port": 3001, "targetPort": 8098})
        ip = entries["api"]["ip"]
        wait_listening(wired, "six")
        assert fetch(ns, entries["six"]["ip"], 3001) == "six"
        download = Download(ns, ip, 3000)
        download.start()
        wait_for(lambda: download.received > 1 << 20 or download.error,
                 what="the download to start")
        assert download.error is None, download.error
        wired.kill()
        # boxd is gone: the kernel still forwards, old and new connections.
        new = Download(ns, ip, 3000)
        new.start()
        wait_for(lambda: new.received > 1 << 20, what="a new download with boxd gone")
        wired.start()
        # What the relay forwards works again as soon as boxd answers: it
        # listens where the rules, which outlived boxd, send.
        assert fetch(ns, entries["six"]["ip"], 3001) == "six"
        assert table(wired)["api"]["ip"] == ip
        download.join(120)
        new.join(120)
        assert download.error is None and download.received == 32 << 20
        assert new.error is None and new.received == 32 << 20
    finally:
        listener.stop()
        six.stop()


def threads_switches(pid):
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        status = open(f"/proc/{pid}/task/{task}/status").read()
        total += int(status.split("voluntary_ctxt_switches:")[1].split()[0])
    return total


def test_no_wakeups_without_services_and_polling_only_with_them(wired):
    if b"libtsan" in subprocess.run(["ldd", BOXD], capture_output=True).stdout:
        pytest.skip("ThreadSanitizer's runtime has a thread of its own that wakes")
    pid = wired.proc.pid
    time.sleep(0.5)
    before = threads_switches(pid)
    time.sleep(2)
    assert threads_switches(pid) == before, "idle boxd woke with no service"
    put(wired, {"name": "api", "port": 3000})
    time.sleep(0.5)
    before = threads_switches(pid)
    time.sleep(1)
    assert threads_switches(pid) - before >= 5  # it watches the listeners
    put(wired)
    time.sleep(0.5)
    before = threads_switches(pid)
    time.sleep(2)
    assert threads_switches(pid) == before, "boxd kept watching with no service left"
