"""Who may call what: the routes that act for the control plane or the
person at the screen (init, lock, secrets, service settings) answer 403
`forbidden` to boxd's own commands, however they reach the socket; the
person's tools and the tests are not commands. The takeover token is
answered once, and a lock outlives a crash of boxd."""
import json
import os
import shlex
import signal
import subprocess
import textwrap
import time

import pytest

from conftest import assert_error, wait_for

# A command's own HTTP call to boxd over its unix socket: prints the status
# and the body. Run by python3 inside the command (no boxctl subcommand
# exists for these routes, and a command could speak HTTP any way it likes).
CALL = textwrap.dedent("""\
    import http.client, json, socket, sys
    class C(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(sys.argv[1])
    c = C("boxd", timeout=20)
    headers = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
    c.request(sys.argv[2], sys.argv[3], body=sys.argv[4], headers=headers)
    r = c.getresponse()
    print(r.status, r.read().decode())
""")

def now_ms():
    return int(time.time() * 1000)


# (An init's time stays within the margins that leave the machine's clock
# alone, should one ever go through.)
CONTROL_CALLS = [
    ("POST", "/v1/init", {"unixMs": None}),
    ("PUT", "/v1/lock", {"locked": True, "note": "mine now"}),
    ("PUT", "/v1/secrets", {"secrets": {"MINE": "a-value-of-mine-123"}}),
]


def write_call_script(boxd):
    script = boxd.root + "/call.py"
    with open(script, "w") as f:
        f.write(CALL)
    return script


def call_line(boxd, method, path, body, headers):
    """The shell line that makes the call from inside a command."""
    if isinstance(body, dict) and "unixMs" in body:
        body = dict(body, unixMs=now_ms())
    return "python3 " + " ".join(shlex.quote(a) for a in [
        boxd.root + "/call.py", boxd.socket, method, path, json.dumps(body),
        json.dumps(headers or {})])


def command_call(boxd, method, path, body, headers=None, how="{}"):
    """Runs the HTTP call from inside a command: `how` is a bash template
    around `{}`, the call itself (daemonized, moved, ...)."""
    write_call_script(boxd)
    wrapper = boxd.root + "/call.sh"
    with open(wrapper, "w") as f:
        f.write("exec " + call_line(boxd, method, path, body, headers) + "\n")
    status, result = boxd.call("POST", "/v1/exec", {"cmd": how.format("bash " + wrapper),
                                                    "timeoutSec": 60})
    assert status == 200, result
    assert result["exitCode"] == 0, result
    code, _, text = result["stdout"].strip().partition(" ")
    return int(code), json.loads(text)


@pytest.mark.parametrize("method, path, body", CONTROL_CALLS)
def test_a_command_may_not_act_for_the_control_plane(boxd, method, path, body):
    assert_error(command_call(boxd, method, path, body), 403, "forbidden", method, path)
    # Nothing of it took effect.
    health = boxd.call("GET", "/v1/health")[1]
    assert health["locked"] is False and health["secrets"]["count"] == 0
    assert boxd.call("GET", "/v1/secrets")[1]["names"] == []


def test_service_settings_are_the_control_planes_too(boxd):
    assert_error(command_call(boxd, "PUT", "/v1/env/api", "TOKEN=x"), 403, "forbidden")
    assert not os.path.exists(os.path.join(boxd.work_dir, ".sbx", "env", "api.env"))


CREDENTIAL_WRITES = [
    ("PUT", "/v1/credentials/git", {"host": "evil.example", "username": "u", "secret": "TOKEN"}),
    ("DELETE", "/v1/credentials/git/github.com", None),
    ("PUT", "/v1/credentials/registry", {"registry": "evil.example", "username": "u",
                                         "secret": "TOKEN"}),
    ("DELETE", "/v1/credentials/registry/registry.example", None),
    ("PUT", "/v1/credentials/aws", {"roleArn": "arn:aws:iam::1:role/evil", "region": "us-east-1",
                                    "webIdentityToken": "eyJ.evil"}),
    ("DELETE", "/v1/credentials/aws", None),
]


@pytest.mark.parametrize("method, path, body", CREDENTIAL_WRITES)
def test_credentials_writes_are_the_control_planes(boxd, method, path, body):
    assert boxd.call("PUT", "/v1/secrets", {"secrets": {"TOKEN": "token-value-12345"}})[0] == 200
    try:
        assert boxd.call("PUT", "/v1/credentials/git", {"host": "github.com", "username": "u",
                                                         "secret": "TOKEN"})[0] == 200
        before = boxd.call("GET", "/v1/credentials")
        assert_error(command_call(boxd, method, path, body), 403, "forbidden", method, path)
        assert boxd.call("GET", "/v1/credentials") == before
        # Reading the table is anyone's.
        assert command_call(boxd, "GET", "/v1/credentials", None) == before
    finally:
        boxd.call("PUT", "/v1/secrets", {"secrets": {}})


def test_a_command_still_reads_and_runs_commands(boxd):
    status, health = command_call(boxd, "GET", "/v1/health", None)
    assert status == 200 and health["ok"] is True
    status, result = command_call(boxd, "POST", "/v1/exec", {"cmd": "echo inner"})
    assert status == 200 and result["stdout"] == "inner\n"
    status, lock = command_call(boxd, "GET", "/v1/lock", None)
    assert status == 200 and lock["locked"] is False


@pytest.mark.parametrize("how", [
    # daemonized: setsid and a double fork, reparented to the shim
    "setsid bash -c '({} > $HOME_OUT.part; mv $HOME_OUT.part $HOME_OUT) &'; "
    "while [ ! -e $HOME_OUT ]; do sleep 0.05; done; cat $HOME_OUT",
    # moved out of its cgroup, to the hierarchy's root: still below its shim
    "echo $$ > {root}/cgroup.procs 2>/dev/null; {}",
])
def test_a_command_that_leaves_its_cgroup_or_session_is_still_one(boxd, how):
    out = os.path.join(boxd.root, "out.txt")
    root = cgroup2_root()
    how = how.replace("$HOME_OUT", out).replace("{root}", root or "/nonexistent")
    assert_error(command_call(boxd, "POST", "/v1/init", {"unixMs": None}, how=how), 403, "forbidden")


def cgroup2_root():
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        if fields[fields.index("-") + 1] == "cgroup2":
            return fields[4]
    return None


def test_a_command_cannot_replay_the_control_planes_lock(boxd):
    """The control plane's lock call, repeated by a command with the same
    X-Request-Id (visible to nobody, but guessable), and an unlock: refused
    before the X-Request-Id memory could replay anything. The command runs
    in the background from before the lock (exec is refused while locked)."""
    go = os.path.join(boxd.root, "go")
    out = os.path.join(boxd.root, "calls.txt")
    headers = {"X-Request-Id": "takeover-1"}
    write_call_script(boxd)
    calls = [call_line(boxd, "PUT", "/v1/lock", {"locked": True}, headers),
             call_line(boxd, "PUT", "/v1/lock", {"locked": False}, {})]
    cmd = f"while [ ! -e {go} ]; do sleep 0.05; done; " + "; ".join(
        f"{line} >> {out}.part" for line in calls) + f"; mv {out}.part {out}"
    status, job = boxd.call("POST", "/v1/exec", {"cmd": cmd, "background": True})
    assert status == 200, job
    status, first = boxd.call("PUT", "/v1/lock", {"locked": True}, headers=headers)
    assert status == 200 and len(first["token"]) == 32
    open(go, "w").close()
    wait_for(lambda: os.path.exists(out), timeout=20, what="the command's calls")
    for line in open(out).read().splitlines():
        code, _, text = line.partition(" ")
        assert_error((int(code), json.loads(text)), 403, "forbidden")
        assert first["token"] not in text
    assert boxd.call("GET", "/v1/lock")[1]["locked"] is True


def test_the_takeover_token_is_answered_once(boxd):
    headers = {"X-Request-Id": "lock-once"}
    status, first = boxd.call("PUT", "/v1/lock", {"locked": True, "note": "a"}, headers=headers)
    assert status == 200 and len(first["token"]) == 32
    # The same call repeated (a retry): the lock as it is, no token.
    status, again = boxd.call("PUT", "/v1/lock", {"locked": True, "note": "a"}, headers=headers)
    assert status == 200 and again["locked"] is True and "token" not in again, again
    # Another lock while locked: refused, no token.
    status, other = boxd.call("PUT", "/v1/lock", {"locked": True, "note": "b"})
    assert_error((status, other), 409, "conflict")
    assert "token" not in json.dumps(other) and first["token"] not in json.dumps(other)
    # Nothing kept on disk holds it either (the X-Request-Id memory).
    for folder, _, names in os.walk(boxd.run_dir):
        for name in names:
            try:
                data = open(os.path.join(folder, name), "rb").read()
            except OSError:
                continue
            assert first["token"].encode() not in data, os.path.join(folder, name)
    # The token still works for the person, and unlocking hands it back.
    assert boxd.call("GET", "/v1/lock")[1]["note"] == "a"
    assert boxd.call("PUT", "/v1/lock", {"locked": False})[1]["locked"] is False
    status, new = boxd.call("PUT", "/v1/lock", {"locked": True})
    assert status == 200 and new["token"] != first["token"]


def test_a_lock_survives_a_crash_of_boxd(keyring_boxd):
    boxd = keyring_boxd
    status, lock = boxd.call("PUT", "/v1/lock", {"locked": True, "note": "paying"},
                             headers={"X-Request-Id": "pay-1"})
    assert status == 200
    boxd.kill(signal.SIGKILL)
    boxd.start()
    state = boxd.call("GET", "/v1/lock")[1]
    assert state == {"locked": True, "note": "paying", "since": lock["since"]}
    assert boxd.call("GET", "/v1/health")[1]["locked"] is True
    assert_error(boxd.call("POST", "/v1/exec", {"cmd": "true"}), 423, "locked")
    # The repeat of the call that locked replays the lock, still without the token.
    status, again = boxd.call("PUT", "/v1/lock", {"locked": True, "note": "paying"},
                              headers={"X-Request-Id": "pay-1"})
    assert status == 200 and again["locked"] is True and "token" not in again
    # The person's token still opens the screen to their input (a wrong one does not).
    wrong = "0" * 32
    assert_error(boxd.call("POST", "/v1/screen/input", {"actions": [{"type": "wait", "ms": 1}]},
                           headers={"X-Takeover": wrong}), 423, "locked")
    status, _ = boxd.call("POST", "/v1/screen/input", {"actions": [{"type": "wait", "ms": 1}]},
                          headers={"X-Takeover": lock["token"]})
    assert status != 423
    assert boxd.call("PUT", "/v1/lock", {"locked": False})[1]["locked"] is False
    boxd.kill(signal.SIGKILL)
    boxd.start()
    assert boxd.call("GET", "/v1/lock")[1]["locked"] is False


def test_a_process_moved_into_a_commands_cgroup_is_one(boxd):
    """Not below a shim (the test starts it) but living in a command's
    cgroup: a command, by where it lives."""
    status, job = boxd.call("POST", "/v1/exec", {"cmd": "sleep 60", "background": True})
    assert status == 200, job
    root = cgroup2_root()
    if not root:
        pytest.skip("no cgroup2 here")
    home = open(f"/proc/{job['pid']}/cgroup").read().split("0::", 1)[1].split("\n")[0]
    write_call_script(boxd)
    mover = (f"echo $$ > {shlex.quote(root + home)}/cgroup.procs && exec "
             + call_line(boxd, "PUT", "/v1/secrets", {"secrets": {"X": "y-value-12345678"}}, {}))
    result = subprocess.run(["bash", "-c", mover], capture_output=True, text=True, timeout=30)
    code, _, text = result.stdout.strip().partition(" ")
    assert_error((int(code), json.loads(text)), 403, "forbidden", result.stderr)
    # The same process left where it was is the test's own: allowed.
    result = subprocess.run(["bash", "-c", "exec " + call_line(boxd, "GET", "/v1/secrets", None, {})],
                            capture_output=True, text=True, timeout=30)
    assert result.stdout.startswith("200 "), result
