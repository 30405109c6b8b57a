"""Freezing right (docs/freeze.md) in the booted box: the freeze stops boxd's
commands and Docker's containers (a `docker pause`d one stays paused across
freeze and thaw), a restart of boxd under systemd keeps the freeze, and
`reclaim` makes the snapshot the host takes small: the snapshot of the box
idle, after reading 1 GiB of files, and after those reads and a freeze with
reclaim, each measured by QEMU (savevm, then delvm: never restored)."""
import os
import signal
import socket
import threading
import time

from boxtest import (BUILD_IMAGE, IMAGE, SOCKET, api, ask_host, boxd_main_pid, figure, health,
                     request, run, serving_again, wait_until)

OUT = "/tmp/freeze-counters"
COUNT = "i=0; while :; do i=$((i+1)); echo $i > {path}; sleep 0.05; done"
READ_BYTES = 1 << 30
RECLAIM_TARGET = 1.25  # the snapshot after reads and reclaim, against the idle one


def box(cmd, timeout=300):
    r = run(cmd, timeout=timeout)
    assert r["exitCode"] == 0, (cmd, r)
    return r["stdout"]


def count(name):
    try:
        with open(f"{OUT}/{name}") as f:
            return int(f.read().strip() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def stands_still(name):
    first = count(name)
    time.sleep(0.5)
    return count(name) == first


def moves(name):
    first = count(name)
    wait_until(f"{name} counting on", lambda: count(name) > first + 2, 30, 0.1)


def cgroup_frozen(pid):
    with open(f"/proc/{pid}/cgroup") as f:
        path = "/sys/fs/cgroup" + f.read().split("0::", 1)[1].strip()
    with open(f"{path}/cgroup.events") as f:
        return dict(line.split() for line in f)["frozen"] == "1"


def container(name, counter):
    box(f"docker run -d --name {name} --network none -v {OUT}:/out {IMAGE} "
        f"sh -c '{COUNT.format(path='/out/' + counter)}'")
    wait_until(f"{name} counting", lambda: count(counter) > 2, 60, 0.2)
    return int(box(f"docker inspect -f '{{{{.State.Pid}}}}' {name}").strip())


def counter_job(name):
    job = api("POST", "/v1/exec", {"cmd": COUNT.format(path=f"{OUT}/{name}"), "background": True})
    wait_until(f"{job['bgId']} counting", lambda: count(name) > 2, 30, 0.1)
    return job


def thaw():
    started = time.monotonic()
    answer = api("POST", "/v1/thaw", {})
    health()
    return answer, (time.monotonic() - started) * 1000


def reasons():
    return health()["activity"]["reasons"]


def turns_on_and_off(reason, begin, end, also=()):
    """`reason` (with `also`) in activity.reasons after begin(), and busy
    false within a second of end(). Returns how long each took (ms)."""
    started = time.monotonic()
    begin()
    wait_until(f"{reason} in activity.reasons", lambda: reason in reasons(), 30, 0.02)
    on_ms = (time.monotonic() - started) * 1000
    got = reasons()
    assert sorted(got) == sorted([reason, *also]), got
    end()
    ended = time.monotonic()
    wait_until(f"busy false after {reason}", lambda: not health()["activity"]["busy"], 1, 0.02)
    return on_ms, (time.monotonic() - ended) * 1000


def unix_request(head):
    """A request on boxd's socket, left open: the caller closes it."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(SOCKET)
    s.sendall(head)
    return s


def read_to_end(s):
    s.settimeout(60)
    while s.recv(65536):
        pass
    s.close()


def check_activity_reasons_turn_on_and_off():
    """Each reason the box can show but `ingress` (test_45_services turns
    that on and off) and `terminal` (no terminals yet): on while in use,
    busy false within a second of the end."""
    for proc in api("GET", "/v1/procs")["procs"]:
        if proc["state"] == "running":
            api("POST", f"/v1/procs/{proc['id']}/stop", {"signal": "SIGKILL"})
    wait_until("no background command running", lambda: health()["procs"]["running"] == 0, 30)
    wait_until("an idle box", lambda: not health()["activity"]["busy"], 10, 0.1)
    took = {}
    held = {}

    def start_call():
        held["call"] = threading.Thread(target=run, args=("sleep 2",))
        held["call"].start()
    took["call"] = turns_on_and_off("call", start_call, lambda: held["call"].join())
    body = b'{"cmd": "sleep 2"}'
    took["stream"] = turns_on_and_off("stream", lambda: held.update(s=unix_request(
        b"POST /v1/exec HTTP/1.1\r\nHost: b\r\nAccept: application/x-ndjson\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body))),
        lambda: read_to_end(held["s"]), also=["call"])
    took["upload"] = turns_on_and_off("upload", lambda: held.update(s=unix_request(
        b"POST /v1/sync/upload?dest=activity HTTP/1.1\r\nHost: b\r\n"
        b"Content-Type: application/gzip\r\nContent-Length: 100000\r\n\r\n\x1f\x8b")),
        lambda: held["s"].close(), also=["call"])
    took["liveView"] = turns_on_and_off("liveView", lambda: held.update(s=unix_request(
        b"GET /v1/screen/live HTTP/1.1\r\nHost: b\r\n\r\n")),
        lambda: held["s"].close(), also=["call"])
    took["recording"] = turns_on_and_off(
        "recording", lambda: api("POST", "/v1/screen/record/start", {}),
        lambda: api("POST", "/v1/screen/record/stop", {}))
    took["background"] = turns_on_and_off(
        "background", lambda: held.update(job=api("POST", "/v1/exec",
                                                  {"cmd": "sleep 600", "background": True})),
        lambda: api("POST", f"/v1/procs/{held['job']['bgId']}/stop", {}))
    took["lock"] = turns_on_and_off("lock", lambda: api("PUT", "/v1/lock", {"locked": True}),
                                    lambda: api("PUT", "/v1/lock", {"locked": False}))
    assert health()["activity"]["idleSince"] is not None
    figure("activity-idle-after-end-ms-max", f"{max(off for _, off in took.values()):.0f}")
    return "on after / busy false after the end, ms: " + ", ".join(
        f"{k} {on:.0f} / {off:.0f}" for k, (on, off) in took.items())


def check_freeze_stops_commands_and_containers_and_keeps_a_pause():
    os.makedirs(OUT, exist_ok=True)
    box(BUILD_IMAGE)
    job = counter_job("command")
    running = container("fz-running", "running")
    container("fz-paused", "paused")
    box("docker pause fz-paused")
    assert stands_still("paused")
    answer = api("POST", "/v1/freeze", {"freezeCommands": True})
    commands = answer["commands"]
    assert commands["frozen"] >= 1 and commands["containers"] >= 1, answer
    assert commands["frozenBefore"] >= 1, answer  # the paused container's
    # Confirmed before the answer: each cgroup says frozen already.
    assert cgroup_frozen(job["pid"]) and cgroup_frozen(running), answer
    assert stands_still("command") and stands_still("running")
    status, _, body = request("POST", "/v1/exec", {"cmd": "true"})
    assert status == 409 and b'"frozen"' in body, (status, body)
    thawed, took_ms = thaw()
    assert thawed["thawed"] is True, thawed
    moves("command")
    moves("running")
    paused = box("docker inspect -f '{{.State.Paused}}' fz-paused").strip()
    assert paused == "true" and stands_still("paused"), paused
    box("docker unpause fz-paused")
    moves("paused")
    box("docker rm -f fz-running fz-paused")
    api("POST", f"/v1/procs/{job['bgId']}/stop", {})
    figure("freeze-commands-ms", answer["tookMs"])
    return (f"froze {commands['frozen']} commands and {commands['containers']} containers in "
            f"{answer['tookMs']} ms, left {commands['frozenBefore']} paused one alone; thawed "
            f"and answering in {took_ms:.0f} ms; the paused container still paused")


def check_a_restart_of_boxd_keeps_the_freeze():
    job = counter_job("restart")
    api("POST", "/v1/freeze", {"freezeCommands": True})
    old = boxd_main_pid()
    os.kill(old, signal.SIGKILL)
    wait_until("boxd serving again after SIGKILL", lambda: serving_again(old), 60, 0.05)
    assert health()["freeze"]["frozen"] is True
    assert stands_still("restart")
    status, _, _ = request("GET", "/v1/procs")
    assert status == 409, status
    thawed, _ = thaw()
    assert thawed["thawed"] is True and thawed["commands"]["thawed"] >= 1, thawed
    moves("restart")
    api("POST", f"/v1/procs/{job['bgId']}/stop", {})
    return f"frozen across a SIGKILL of boxd (pid {old}); the new boxd thawed it: {thawed}"


def read_files(limit):
    """Reads files of the image (what a build or a test run reads) until
    `limit` bytes; returns how many were read."""
    total = 0
    for top in ("/usr", "/var/lib", "/opt"):
        for root, dirs, files in os.walk(top):
            for name in files:
                path = os.path.join(root, name)
                try:
                    if not os.path.isfile(path) or os.path.islink(path):
                        continue
                    with open(path, "rb") as f:
                        while block := f.read(1 << 20):
                            total += len(block)
                except OSError:
                    continue
                if total >= limit:
                    return total
    return total


def snapshot(name):
    """The size of a snapshot of the box now (the host prints it as a figure)."""
    answer, _ = ask_host(f"BOXTEST-SNAPSHOT {name}", timeout=600)
    assert answer["event"] == "saved" and answer.get("name") == name, answer
    return answer["vmSizeBytes"]


def check_reclaim_makes_the_snapshot_small():
    reports = any(open(f"{d}/features").read()[5] == "1" for d in
                  (f"/sys/bus/virtio/drivers/virtio_balloon/{n}" for n in
                   os.listdir("/sys/bus/virtio/drivers/virtio_balloon") if n.startswith("virtio")))
    assert reports, "no virtio balloon with free page reporting (tests/box/run gives one)"
    idle = snapshot("freeze-idle")
    read = read_files(READ_BYTES)
    assert read >= READ_BYTES, f"only {read} bytes of files to read"
    after_reads = snapshot("freeze-reads")
    answer = api("POST", "/v1/freeze", {"reclaim": True, "freezeCommands": True}, timeout=120)
    flush = answer["flush"]
    assert flush["dropped"] and flush["reported"] and flush["zeroedBytes"] > 0, answer
    after_reclaim = snapshot("freeze-reclaim")
    thawed, took_ms = thaw()
    assert thawed["thawed"] is True, thawed
    ratio = after_reclaim / idle
    figure("freeze-reclaim-ms", answer["tookMs"])
    figure("freeze-reclaim-zero-ms", flush["zeroMs"])
    figure("thaw-to-answer-ms", f"{took_ms:.0f}")
    figure("snapshot-reclaim-ratio", f"{ratio:.2f}")
    before, after = answer["memory"]["before"], answer["memory"]["after"]
    detail = (f"snapshot idle {idle >> 20} MiB, after reading {read >> 20} MiB of files "
              f"{after_reads >> 20} MiB, after those reads and reclaim {after_reclaim >> 20} MiB "
              f"({ratio:.2f}x idle; target {RECLAIM_TARGET}x); the freeze took {answer['tookMs']} ms "
              f"(cache {before['cacheBytes'] >> 20} -> {after['cacheBytes'] >> 20} MiB, "
              f"steps in ms: sync {flush['syncMs']}, drop {flush['dropMs']}, compact "
              f"{flush['compactMs']}, zero {flush['zeroMs']} for {flush['zeroedBytes'] >> 20} MiB), "
              f"thaw to answer {took_ms:.0f} ms")
    assert ratio <= RECLAIM_TARGET, detail
    return detail
