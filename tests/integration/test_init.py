"""POST /v1/init: what the control plane sets at claim and after every thaw
or restore. The clock itself is only ever set inside a booted box (it is the
machine's); here the calls stay within the margins that leave it alone."""
import os
import shutil
import tempfile
import time

import pytest

from conftest import Boxd


@pytest.fixture
def initbox(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1\tlocalhost\n# a line the user wrote\n10.0.0.9\tmine\n")
    (tmp_path / "box").mkdir()
    instance = Boxd(str(tmp_path / "box"), ["--hosts-file", str(hosts)])
    instance.hosts = hosts
    instance.start()
    yield instance
    instance.stop()


def now_ms():
    return int(time.time() * 1000)


def test_init_writes_its_hosts_block_and_keeps_every_other_line(initbox):
    status, answer = initbox.call("POST", "/v1/init", {
        "unixMs": now_ms(), "hosts": {"api": "127.0.0.1", "db.wire": "fd00::5"}})
    assert status == 200 and answer["applied"] is True and answer["clockSet"] is False
    text = initbox.hosts.read_text()
    assert text.startswith("127.0.0.1\tlocalhost\n# a line the user wrote\n10.0.0.9\tmine\n")
    assert "127.0.0.1\tapi\n" in text and "fd00::5\tdb.wire\n" in text
    # A second init replaces the block, never appends a second one.
    assert initbox.call("POST", "/v1/init", {"unixMs": now_ms(), "hosts": {"cache": "10.1.2.3"}})[0] == 200
    text = initbox.hosts.read_text()
    assert text.count("# boxd: begin") == 1 and "api" not in text and "10.1.2.3\tcache\n" in text
    assert "10.0.0.9\tmine\n" in text
    # An empty object removes the block.
    assert initbox.call("POST", "/v1/init", {"unixMs": now_ms(), "hosts": {}})[0] == 200
    assert initbox.hosts.read_text() == "127.0.0.1\tlocalhost\n# a line the user wrote\n10.0.0.9\tmine\n"


def test_an_older_init_changes_nothing(initbox):
    first = now_ms()
    assert initbox.call("POST", "/v1/init", {"unixMs": first, "env": {"STAGE": "new"}})[1]["applied"]
    status, answer = initbox.call("POST", "/v1/init", {"unixMs": first - 1000, "env": {"STAGE": "old"}})
    assert status == 200 and answer["applied"] is False
    status, result = initbox.call("POST", "/v1/exec", {"cmd": "echo $STAGE"})
    assert result["stdout"] == "new\n"


def test_env_user_and_work_dir_become_the_defaults_and_survive_a_restart(initbox):
    # Where the user "nobody" may go (the test's own dirs are root's alone).
    place = tempfile.mkdtemp(prefix="boxd-init-")
    os.chmod(place, 0o755)
    try:
        check_defaults(initbox, place)
    finally:
        shutil.rmtree(place)


def check_defaults(initbox, place):
    assert initbox.call("POST", "/v1/init", {
        "unixMs": now_ms(), "env": {"REGION": "eu-1", "API_TOKEN": "tok-very-secret-123456"},
        "user": "nobody", "workDir": place})[1]["applied"]
    script = "echo $REGION $API_TOKEN; id -un; pwd"
    result = initbox.call("POST", "/v1/exec", {"cmd": script})[1]
    assert "stdout" in result, result
    assert result["stdout"] == f"eu-1 ****\nnobody\n{place}\n", result
    # The request's own fields still win.
    result = initbox.call("POST", "/v1/exec", {"cmd": script, "user": "root", "cwd": "/",
                                               "env": {"REGION": "us-2"}})[1]
    assert result["stdout"] == "us-2 ****\nroot\n/\n", result
    initbox.kill()
    initbox.log_file.close()
    initbox.start()
    result = initbox.call("POST", "/v1/exec", {"cmd": script})[1]
    assert result["stdout"] == f"eu-1 ****\nnobody\n{place}\n", result
    assert "tok-very-secret" not in initbox.call("GET", "/v1/steps")[1].__repr__()


def test_instance_id_is_new_at_each_applied_init(initbox):
    first = initbox.call("GET", "/v1/health")[1]["instanceId"]
    assert len(first) == 32
    answer = initbox.call("POST", "/v1/init", {"unixMs": now_ms()})[1]
    second = initbox.call("GET", "/v1/health")[1]["instanceId"]
    assert answer["instanceId"] == second != first
    # A late, older init is not a new instance.
    initbox.call("POST", "/v1/init", {"unixMs": now_ms() - 1000})
    assert initbox.call("GET", "/v1/health")[1]["instanceId"] == second


@pytest.mark.parametrize("body, words", [
    ({"hosts": {"bad name": "127.0.0.1"}}, "not a host name"),
    ({"hosts": {"api": "999.1.1.1"}}, "IPv4 or IPv6"),
    ({"hosts": ["api"]}, "hosts must be an object"),
    ({"env": {"1X": "v"}}, "env entry"),
    ({"unixMs": "soon"}, "unixMs"),
    ({"workDir": "relative/dir"}, "workDir"),
    ({"workDir": "/no/such/dir"}, "workDir"),
    ({"user": 5}, "user must be a string"),
])
def test_a_malformed_init_is_refused_whole(initbox, body, words):
    before = initbox.hosts.read_text()
    status, answer = initbox.call("POST", "/v1/init", {**body, "hosts": body.get("hosts", {"x": "1.2.3.4"})})
    assert status == 400 and words in answer["error"]["message"], answer
    assert initbox.hosts.read_text() == before


def test_init_is_a_step(initbox):
    initbox.call("POST", "/v1/init", {"unixMs": now_ms(), "hosts": {"a": "1.2.3.4"}})
    steps = initbox.call("GET", "/v1/steps")[1]["steps"]
    assert steps[-1]["kind"] == "init" and "1 hosts" in steps[-1]["summary"]


def test_an_init_reconnects_the_report_and_says_thawed(tmp_path):
    import json
    import socket
    path = str(tmp_path / "report.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(4)
    server.settimeout(10)
    (tmp_path / "box").mkdir()
    instance = Boxd(str(tmp_path / "box"), ["--hosts-file", str(tmp_path / "hosts"),
                                            "--report", f"unix:{path}", "--report-interval", "30"])
    instance.start()
    try:
        first, _ = server.accept()
        first.settimeout(10)
        assert json.loads(first.recv(65536).splitlines()[0])["event"] == "ready"
        status, answer = instance.call("POST", "/v1/init", {"unixMs": now_ms()})
        assert status == 200 and answer["applied"]
        assert first.recv(65536) == b""  # the old connection is dropped...
        second, _ = server.accept()      # ...and a new one made at once
        second.settimeout(10)
        event = json.loads(second.recv(65536).splitlines()[0])
        assert event["event"] == "thawed" and event["instanceId"] == answer["instanceId"]
    finally:
        instance.stop()


def test_a_call_in_flight_keeps_the_box_awake(initbox):
    import threading
    from conftest import wait_for
    done = {}
    thread = threading.Thread(target=lambda: done.update(
        r=initbox.call("POST", "/v1/exec", {"cmd": "sleep 2; echo late"}, timeout=30)))
    thread.start()
    activity = wait_for(lambda: (lambda a: a if a["callsInFlight"] == 1 else None)(
        initbox.call("GET", "/v1/health")[1]["activity"]), what="the call to be in flight")
    assert activity["keepAwakeUntil"] >= now_ms() + 10 * 60 * 1000 - 2000
    thread.join()
    ended = now_ms()
    activity = initbox.call("GET", "/v1/health")[1]["activity"]
    assert activity["callsInFlight"] == 0
    # The end of a call counts as activity too: the freeze clock starts there.
    assert activity["lastCallAt"] >= ended - 1500


def test_an_init_replaces_the_spare_shims(initbox):
    """Spares started before a snapshot, each holding a command id drawn
    then, would serve the next commands of every box restored from it, under
    the same ids: after an init new ones wait instead, with new ids."""
    from conftest import wait_for
    from test_spares import maker, parent, spares, two_spares
    before = two_spares(initbox)
    old_maker = maker(initbox)
    assert initbox.call("POST", "/v1/init", {"unixMs": now_ms()})[1]["applied"]
    after = wait_for(lambda: (lambda s: s if len(s) == 2 and len(set(s.values())) == 2 and
                              not set(s) & set(before) else None)(spares(initbox)),
                     what="two new spare shims, the old ones gone")
    assert not set(after.values()) & set(before.values()), (before, after)
    # Their maker too: what it forks shares its canary and address layout.
    new_maker = wait_for(lambda: (lambda m: m if m and m != old_maker else None)(maker(initbox)),
                         what="a new spare maker")
    wait_for(lambda: not os.path.exists(f"/proc/{old_maker}"), what="the old maker to leave")
    assert all(parent(pid) == new_maker for pid in after), (new_maker, after)
    # A new spare serves the next command, under its new id.
    result = initbox.call("POST", "/v1/exec", {"cmd": "echo served"})[1]
    assert result["stdout"] == "served\n", result
    assert result["id"] in after.values() and result["id"] not in before.values(), result
