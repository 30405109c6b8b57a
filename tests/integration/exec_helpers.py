"""Helpers shared by the exec and procs tests."""
import glob
import json
import os
import signal
import socket
import time

import pytest

from conftest import UnixConnection, wait_for


def run(boxd, cmd, timeout=60, **fields):
    status, body = boxd.call("POST", "/v1/exec", {"cmd": cmd, **fields}, timeout=timeout)
    return status, body


def ok(boxd, cmd, **fields):
    status, body = run(boxd, cmd, **fields)
    assert status == 200, body
    return body


def start_bg(boxd, cmd, **fields):
    status, body = run(boxd, cmd, background=True, **fields)
    assert status == 200, body
    return body["bgId"]


def proc(boxd, bg_id):
    status, body = boxd.call("GET", f"/v1/procs/{bg_id}")
    assert status == 200, body
    return body


def wait_exited(boxd, bg_id, timeout=30):
    return wait_for(lambda: (lambda p: p if p["state"] == "exited" else None)(proc(boxd, bg_id)),
                    timeout=timeout, what=f"{bg_id} to exit")


def wait_result(boxd, exec_id, timeout=30):
    def ended():
        status, body = boxd.call("GET", f"/v1/exec/{exec_id}")
        return body if status == 200 and body.get("state") == "exited" else None
    return wait_for(ended, timeout=timeout, what=f"{exec_id} to end")


def stream(boxd, body, timeout=60, stop_after=None):
    """Posts an NDJSON exec and returns its events (all, or up to the first of
    type `stop_after`, leaving the connection closed)."""
    connection = UnixConnection(boxd.socket, timeout=timeout)
    connection.request("POST", "/v1/exec", body=json.dumps(body),
                       headers={"Accept": "application/x-ndjson",
                                "Content-Type": "application/json"})
    response = connection.getresponse()
    events = []
    try:
        assert response.status == 200, response.read()
        while True:
            line = response.fp.readline()
            if not line:
                break
            if line.strip() and not line.strip().isalnum():
                events.append(json.loads(line))
                if stop_after and events[-1]["type"] == stop_after:
                    break
                if events[-1]["type"] == "exit":
                    break
    finally:
        connection.close()
    return events


def shim_states(boxd):
    """(meta fields) of every state dir, as dicts of the simple fields."""
    states = []
    for meta_path in glob.glob(os.path.join(boxd.run_dir, "procs", "*", "meta")):
        try:
            fields = read_fields(meta_path)
        except FileNotFoundError:  # a result forgotten since the glob
            continue
        fields["ended"] = os.path.exists(os.path.join(os.path.dirname(meta_path), "exit"))
        states.append(fields)
    return states


def files_under(top):
    """(path, bytes) of every regular file under `top` that is still there
    when read: a running boxd's run dir changes under a walk (spares come and
    go, staged files are renamed into place)."""
    for directory, _, names in os.walk(top):
        for name in names:
            path = os.path.join(directory, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            try:
                with open(path, "rb") as f:
                    yield path, f.read()
            except FileNotFoundError:
                continue


def read_fields(path):
    data = open(path, "rb").read()
    fields, at = {}, 0
    while at < len(data):
        newline = data.index(b"\n", at)
        key, length = data[at:newline].split(b" ")
        value = data[newline + 1:newline + 1 + int(length)]
        fields[key.decode()] = value.decode(errors="replace")
        at = newline + 1 + int(length) + 1
    return fields


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def is_shim(pid):
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")) == "boxd-shim"
    except OSError:
        return False


def cleanup(boxd):
    """Shims outlive boxd by design: end every one this test started."""
    for state in shim_states(boxd):
        for key in ("cgroup", "pidsCgroup"):
            if state.get(key) and os.path.isdir(state[key]):
                try:
                    with open(os.path.join(state[key], "cgroup.kill"), "w") as f:
                        f.write("1")
                except OSError:
                    pass
        shim = int(state.get("shimPid", 0))
        if shim > 0 and alive(shim) and is_shim(shim):
            try:
                os.kill(shim, signal.SIGKILL)
            except OSError:
                pass
    # Leave no cgroup dirs behind on the host: the jobs', then boxd's own.
    bases = set()
    for state in shim_states(boxd):
        for key in ("cgroup", "pidsCgroup"):
            if state.get(key):
                bases.add(os.path.dirname(state[key]))
                remove_cgroup(state[key])
    for base in bases:
        remove_cgroup(os.path.join(base, "shims"))
        remove_cgroup(base)


def remove_cgroup(path):
    deadline = time.monotonic() + 5
    while os.path.isdir(path) and time.monotonic() < deadline:
        try:
            os.rmdir(path)
        except OSError:
            time.sleep(0.05)


@pytest.fixture
def box(boxd):
    yield boxd
    boxd.stop()  # first, so its spare shim leaves the cgroup too
    cleanup(boxd)
