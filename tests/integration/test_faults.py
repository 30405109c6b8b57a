"""Faults and careless input: what used to break boxd quietly."""
import json


def test_nul_in_cmd_is_refused(boxd):
    body = '{"cmd": "echo a\\u0000; echo b"}'
    response = boxd.request("POST", "/v1/exec", body, headers={"Content-Type": "application/json"})
    assert response.status == 400
    error = response.json()["error"]
    assert error["code"] == "bad_request"
    assert "NUL" in error["message"]


def test_nul_in_env_value_is_refused(boxd):
    body = '{"cmd": "echo $A", "env": {"A": "x\\u0000y"}}'
    response = boxd.request("POST", "/v1/exec", body, headers={"Content-Type": "application/json"})
    assert response.status == 400
    assert response.json()["error"]["code"] == "bad_request"


def test_escaped_backslash_before_u0000_text_is_not_a_nul(boxd):
    # "\\u0000" is a backslash followed by the text u0000: a legal command.
    body = json.dumps({"cmd": "printf '%s\\n' '\\u0000'"})
    status, result = boxd.call("POST", "/v1/exec", json.loads(body))
    assert status == 200, result
    assert result["stdout"] == "\\u0000\n"


def test_a_removed_socket_is_made_again(boxd):
    import os
    from conftest import wait_for
    os.unlink(boxd.socket)
    wait_for(lambda: os.path.exists(boxd.socket), timeout=5, what="the socket to be made again")
    status, health = boxd.call("GET", "/v1/health")
    assert status == 200 and health["ok"] is True
    # Moved away counts as removed too.
    os.rename(boxd.socket, boxd.socket + ".moved")
    wait_for(lambda: os.path.exists(boxd.socket), timeout=5, what="the socket to be made again")
    assert boxd.call("GET", "/v1/health")[0] == 200
    assert "was removed; serving on a new one" in boxd.log()


def test_out_of_fds_rests_the_listener_and_recovers(boxd):
    """At the fd limit the listener neither spins nor floods the log, and
    boxd answers again as soon as fds free up."""
    import socket
    import subprocess
    import time
    pid = boxd.proc.pid
    subprocess.run(["prlimit", "--pid", str(pid), "--nofile=3:"], check=True)
    peers = []
    try:
        for _ in range(20):  # waiting peers keep the listener readable
            peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            peer.settimeout(2)
            peer.connect(boxd.socket)
            peers.append(peer)
        ticks_before = _cpu_ticks(pid)
        time.sleep(2)
        spent = _cpu_ticks(pid) - ticks_before
    finally:
        subprocess.run(["prlimit", "--pid", str(pid), "--nofile=1024:"], check=True)
    for peer in peers:
        peer.close()
    assert spent < 50, f"boxd spent {spent} ticks in 2 s at the fd limit (a spinning listener)"
    warnings = boxd.log().count("out of file descriptors")
    assert 1 <= warnings <= 12, boxd.log()[-2000:]
    assert "Error from accept() call" not in boxd.log()
    assert boxd.call("GET", "/v1/health")[0] == 200


def _cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])
