"""POST /v1/freeze and /v1/thaw, and an init's entropy (API.md "Freeze" and
"Init", docs/freeze.md), against a real boxd with real cgroup v2 freezers:
commands stop and resume, calls meanwhile are refused and run after, a
cgroup frozen by someone else stays theirs, a restart keeps the freeze, and
a freeze left alone ends by itself."""
import base64
import os
import time

import pytest

from conftest import assert_error, wait_for
from test_cgroups import cgroup2_mount, own_cgroup2

COUNTER = "i=0; while :; do i=$((i+1)); echo $i > {path}; sleep 0.02; done"


def cgroup_dir(pid):
    mount, own = cgroup2_mount(), own_cgroup2(pid)
    return mount + own if mount and own else None


def events(directory):
    with open(f"{directory}/cgroup.events") as f:
        return dict(line.split() for line in f)


def counter_job(box, tmp_path):
    path = tmp_path / f"counter-{time.monotonic_ns()}"
    status, job = box.call("POST", "/v1/exec", {"cmd": COUNTER.format(path=path),
                                                 "background": True})
    assert status == 200, job
    wait_for(lambda: path.exists() and path.read_text().strip(), what="the counter")
    directory = cgroup_dir(job["pid"])
    if not directory or not os.path.exists(f"{directory}/cgroup.freeze"):
        pytest.skip("no cgroup v2 freezer for boxd's commands here")
    return job, path, directory


def count(path):
    text = path.read_text().strip()
    return int(text) if text else 0


def stands_still(path):
    first = count(path)
    time.sleep(0.3)
    return count(path) == first


def moves(path):
    first = count(path)
    return wait_for(lambda: count(path) > first + 2, timeout=5, what="the counter to move")


def frozen(box):
    return box.call("GET", "/v1/health")[1]["freeze"]["frozen"]


def test_freeze_stops_every_command_and_thaw_resumes_them(boxd, tmp_path):
    job, path, directory = counter_job(boxd, tmp_path)
    status, answer = boxd.call("POST", "/v1/freeze", {"freezeCommands": True})
    assert status == 200, answer
    assert answer["frozen"] is True and answer["commands"]["frozen"] == 1, answer
    # Confirmed before the answer: the kernel says so already.
    assert events(directory)["frozen"] == "1"
    assert stands_still(path)
    assert frozen(boxd) is True
    assert answer["flush"]["synced"] is True and "dropped" not in answer["flush"], answer
    for key in ("usedBytes", "cacheBytes"):
        assert answer["memory"]["before"][key] > 0 and answer["memory"]["after"][key] > 0

    status, thawed = boxd.call("POST", "/v1/thaw", {})
    assert status == 200 and thawed["thawed"] is True, thawed
    assert thawed["commands"]["thawed"] >= 1 and thawed["frozenMs"] >= 300, thawed
    assert events(directory)["frozen"] == "0"
    moves(path)
    # A thaw with nothing frozen says so.
    assert boxd.call("POST", "/v1/thaw", {})[1] == {"thawed": False}


def test_calls_while_frozen_are_refused_and_run_after(boxd, tmp_path):
    marker = tmp_path / "ran"
    assert boxd.call("POST", "/v1/freeze", {})[0] == 200
    call = {"cmd": f"echo once >> {marker}"}
    headers = {"X-Request-Id": "during-the-freeze"}
    assert_error(boxd.call("POST", "/v1/exec", call, headers=headers), 409, "frozen")
    assert_error(boxd.call("GET", "/v1/procs"), 409, "frozen")
    assert_error(boxd.call("POST", "/v1/freeze", {}), 409, "frozen")
    assert boxd.call("GET", "/v1/health")[0] == 200
    assert not marker.exists()
    assert boxd.call("POST", "/v1/thaw", {})[0] == 200
    # The refused call was not remembered: its repeat runs now, once.
    status, result = boxd.call("POST", "/v1/exec", call, headers=headers)
    assert status == 200 and result["exitCode"] == 0, result
    assert boxd.call("POST", "/v1/exec", call, headers=headers)[0] == 200
    assert marker.read_text() == "once\n"


def test_init_undoes_a_freeze(boxd, tmp_path):
    job, path, directory = counter_job(boxd, tmp_path)
    assert boxd.call("POST", "/v1/freeze", {"freezeCommands": True})[0] == 200
    assert stands_still(path)
    status, answer = boxd.call("POST", "/v1/init", {"unixMs": int(time.time() * 1000)})
    assert status == 200 and answer["thawed"] is True, answer
    moves(path)
    assert frozen(boxd) is False
    status, answer = boxd.call("POST", "/v1/init", {})
    assert answer["thawed"] is False, answer


def test_a_cgroup_frozen_by_someone_else_stays_frozen(boxd, tmp_path):
    """As `docker pause` does: the freeze leaves it alone, the thaw too."""
    job, path, directory = counter_job(boxd, tmp_path)
    with open(f"{directory}/cgroup.freeze", "w") as f:
        f.write("1")
    wait_for(lambda: events(directory)["frozen"] == "1")
    status, answer = boxd.call("POST", "/v1/freeze", {"freezeCommands": True})
    assert answer["commands"]["frozen"] == 0 and answer["commands"]["frozenBefore"] >= 1, answer
    assert boxd.call("POST", "/v1/thaw", {})[0] == 200
    assert events(directory)["frozen"] == "1" and stands_still(path)
    with open(f"{directory}/cgroup.freeze", "w") as f:
        f.write("0")
    moves(path)


def test_a_freeze_left_alone_is_undone_by_boxd(boxd_factory, tmp_path):
    box = boxd_factory("--freeze-limit", "2")
    job, path, directory = counter_job(box, tmp_path)
    assert box.call("POST", "/v1/freeze", {"freezeCommands": True})[0] == 200
    assert stands_still(path)
    wait_for(lambda: frozen(box) is False, timeout=5, what="boxd to undo the freeze")
    moves(path)
    assert "freeze undone (limit)" in box.log()


def test_a_restart_of_boxd_keeps_the_freeze_undoable(boxd, tmp_path):
    job, path, directory = counter_job(boxd, tmp_path)
    assert boxd.call("POST", "/v1/freeze", {"freezeCommands": True})[0] == 200
    boxd.kill()
    boxd.start()
    assert frozen(boxd) is True and stands_still(path)
    assert_error(boxd.call("POST", "/v1/exec", {"cmd": "true"}), 409, "frozen")
    status, thawed = boxd.call("POST", "/v1/thaw", {})
    assert thawed["thawed"] is True and thawed["commands"]["thawed"] >= 1, thawed
    moves(path)
    assert boxd.call("GET", f"/v1/procs/{job['bgId']}")[1]["state"] == "running"


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping the caches takes root")
def test_reclaim_drops_the_clean_caches(boxd, tmp_path):
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.write(os.urandom(1 << 20) * 128)
    with open(big, "rb") as f:
        while f.read(1 << 20):
            pass
    status, answer = boxd.call("POST", "/v1/freeze", {"reclaim": True}, timeout=60)
    assert status == 200, answer
    flush = answer["flush"]
    assert flush["synced"] and flush["dropped"] and flush["compacted"], flush
    before, after = answer["memory"]["before"], answer["memory"]["after"]
    assert after["cacheBytes"] < before["cacheBytes"] - (96 << 20), answer
    # What the drop freed is zeroed (for the snapshot), in 64 MiB pieces.
    freed = before["cacheBytes"] - after["cacheBytes"]
    assert 0 < flush["zeroedBytes"] <= freed * 9 // 8 + (64 << 20), (freed, flush)
    assert flush["zeroedBytes"] % (64 << 20) == 0, flush
    assert boxd.call("POST", "/v1/thaw", {})[0] == 200


def test_bad_freeze_requests_change_nothing(boxd):
    for body in ({"reclaim": "yes"}, {"freezeCommands": 1}, [1]):
        assert_error(boxd.call("POST", "/v1/freeze", body), 400, "bad_request", body)
        assert frozen(boxd) is False
    assert_error(boxd.call("GET", "/v1/freeze"), 405, "method_not_allowed")


# ---- entropy ----

def entropy(n):
    return base64.b64encode(os.urandom(n)).decode()


def test_init_entropy_is_given_to_the_kernel(boxd):
    status, answer = boxd.call("POST", "/v1/init", {"entropy": entropy(64)})
    assert status == 200, answer
    assert answer["entropy"] == ("reseeded" if os.geteuid() == 0 else "mixed"), answer
    status, answer = boxd.call("POST", "/v1/init", {"entropy": entropy(512).rstrip("=")})
    assert status == 200, answer
    assert "entropy" not in boxd.call("POST", "/v1/init", {})[1]


@pytest.mark.parametrize("value", [
    "not base64!", entropy(31), entropy(513), 12, "QUJD\n" * 20, "QQ=", "QR==" * 11,
    base64.urlsafe_b64encode(b"\xfb" * 48).decode(),
], ids=["alphabet", "31-bytes", "513-bytes", "number", "newlines", "bad-padding",
        "nonzero-tail-bits", "url-alphabet"])
def test_bad_entropy_is_refused_and_nothing_applied(boxd, value):
    body = {"entropy": value, "env": {"FROM_BAD_INIT": "1"}}
    status, answer = boxd.call("POST", "/v1/init", body)
    assert_error((status, answer), 400, "bad_request", value)
    assert "entropy" in answer["error"]["message"], answer
    result = boxd.call("POST", "/v1/exec", {"cmd": "echo ${FROM_BAD_INIT:-unset}"})[1]
    assert result["stdout"] == "unset\n", result


def test_boxctl_freeze_and_thaw(boxd):
    out = boxd.boxctl("freeze", "--commands")
    assert out.returncode == 0 and b"frozen in " in out.stdout, out
    out = boxd.boxctl("health")
    assert b"FROZEN" in out.stdout, out
    out = boxd.boxctl("exec", "--", "true")
    assert out.returncode == 1 and b"frozen" in out.stderr, out
    out = boxd.boxctl("thaw")
    assert out.returncode == 0 and out.stdout.startswith(b"thawed after "), out
    assert boxd.boxctl("thaw").stdout == b"nothing was frozen\n"
    assert boxd.boxctl("freeze", "--now").returncode == 2
    assert b"idle for" in boxd.boxctl("health").stdout
