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
