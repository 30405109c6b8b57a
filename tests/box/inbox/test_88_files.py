"""Files and changes in the booted box, over vsock (the control plane's way
in): what a container and git write under /work reaches the changes
journal, compared with a walk of the tree before and after; a follower
sees a container's write at once; a file is put whole, read by range and
by ETag."""
import hashlib
import json
import os
import stat
import time

from boxtest import BUILD_IMAGE, IMAGE, Connection, api, figure, request, run

VSOCK = (1, 1024)  # VMADDR_CID_LOCAL: the loopback transport (test_20_vsock.py)
ROOT = "/work/chg"


def box(cmd, timeout=300):
    result = run(cmd, timeout)
    assert result["exitCode"] == 0, f"{cmd}: {result}"
    return result


def walk():
    """path -> (type, size, mtime_ns) for everything under ROOT but .git."""
    seen = {}
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            path = os.path.join(top, name)
            st = os.lstat(path)
            kind = "dir" if stat.S_ISDIR(st.st_mode) else "link" if stat.S_ISLNK(st.st_mode) else "file"
            seen[path] = (kind, 0 if kind == "dir" else st.st_size, 0 if kind == "dir" else st.st_mtime_ns)
    return seen


def walk_difference(before, after):
    created = {p for p in after if p not in before}
    removed = {p for p in before if p not in after}
    modified = {p for p in after if p in before and after[p] != before[p]}
    return created, removed, modified


def journal_difference(changes):
    created, removed, modified = set(), set(), set()
    for change in changes:
        if change["kind"] == "moved":
            removed.add(change["from"])
            created.add(change["path"])
        elif change["kind"] == "modified" and change["type"] == "dir":
            continue  # a folder's own times: the walk above compares none
        else:
            {"created": created, "removed": removed, "modified": modified}[change["kind"]].add(
                change["path"])
    return created, removed, modified


def changes_since(cursor):
    return api("GET", f"/v1/files/changes?path={ROOT}&since={cursor}", address=VSOCK)


def check_changes_match_a_walk_after_a_container_and_git():
    box(BUILD_IMAGE)
    box(f"rm -rf {ROOT} && mkdir -p {ROOT} && cd {ROOT} && git init -q -b main . && "
        "git config user.email b@x && git config user.name b && "
        "mkdir -p src docs && for i in $(seq 1 40); do echo $i > src/f$i.c; done && "
        "echo readme > docs/README && git add -A && git commit -qm one && "
        "git checkout -qb other && git rm -q src/f1.c && echo changed > src/f2.c && "
        "mkdir lib && echo new > lib/new.c && git add -A && git commit -qm two && "
        "git checkout -q main")
    cursor = api("GET", f"/v1/files/changes?path={ROOT}", address=VSOCK)["cursor"]
    before = walk()
    box(f"docker run --rm -v {ROOT}:/c {IMAGE} sh -c "
        "'echo hi > /c/from-container; mkdir -p /c/out/deep; echo x > /c/out/deep/y; "
        "rm /c/src/f3.c; mv /c/src/f4.c /c/docs/f4.c'")
    box(f"cd {ROOT} && git checkout -q other")
    after = walk()
    expected = walk_difference(before, after)
    deadline = time.monotonic() + 10
    while True:
        answer = changes_since(cursor)
        assert "all" not in answer, answer
        got = journal_difference(answer["changes"])
        if got == expected or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert got == expected, f"journal {got} walk {expected}"


def check_a_follower_sees_a_container_write():
    box(f"mkdir -p {ROOT}/live")
    conn = Connection(VSOCK, timeout=30)
    cursor = api("GET", f"/v1/files/changes?path={ROOT}/live", address=VSOCK)["cursor"]
    conn.request("GET", f"/v1/files/changes?path={ROOT}/live&since={cursor}&follow=1")
    response = conn.getresponse()
    assert response.status == 200
    delays = []
    for i in range(5):
        written = time.monotonic()
        with open(f"{ROOT}/live/n{i}", "w") as f:
            f.write("x")
        while True:
            line = response.readline()
            assert line, "the follow stream ended"
            event = json.loads(line)
            if event.get("path") == f"{ROOT}/live/n{i}":
                delays.append(time.monotonic() - written)
                break
    conn.close()
    delays.sort()
    figure("changes_follow_delay_ms_p50", round(delays[len(delays) // 2] * 1000, 1))
    assert delays[len(delays) // 2] < 1.0, delays


def check_a_file_put_whole_and_read_by_range():
    data = os.urandom(3 << 20)
    digest = hashlib.sha256(data).hexdigest()
    status, _, body = request("PUT", f"/v1/files?path={ROOT}/put/blob.bin&mode=0640", data,
                              address=VSOCK, headers={"X-Content-SHA256": digest})
    assert status == 200, body
    with open(f"{ROOT}/put/blob.bin", "rb") as f:
        assert f.read() == data
    assert stat.S_IMODE(os.stat(f"{ROOT}/put/blob.bin").st_mode) == 0o640
    status, headers, body = request("GET", f"/v1/files?path={ROOT}/put/blob.bin", address=VSOCK,
                                    headers={"Range": "bytes=-1000"})
    assert status == 206 and body == data[-1000:], status
    etag = headers["ETag"]
    status, _, body = request("GET", f"/v1/files?path={ROOT}/put/blob.bin", address=VSOCK,
                              headers={"If-None-Match": etag})
    assert status == 304 and body == b"", status
    bad = request("PUT", f"/v1/files?path={ROOT}/put/blob.bin", b"other", address=VSOCK,
                  headers={"X-Content-SHA256": digest})
    assert bad[0] == 400, bad
    with open(f"{ROOT}/put/blob.bin", "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == digest, "a refused body changed the file"


def check_the_package_raises_the_inotify_limits():
    """/usr/lib/sysctl.d/60-boxd.conf, applied at boot: room for the changes
    journal and the box's own watchers at once."""
    with open("/proc/sys/fs/inotify/max_user_watches") as f:
        assert int(f.read()) >= 1048576
    with open("/proc/sys/fs/inotify/max_user_instances") as f:
        assert int(f.read()) >= 1024
