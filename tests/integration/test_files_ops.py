"""Files one at a time: stat, list, PUT, mkdir, move, chmod, DELETE, and the
ETag of GET /v1/files, each compared with what the shell sees."""
import hashlib
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
import time
import urllib.parse

import pytest

from conftest import FLAT_MEMORY_ENV, MEMORY_SCALE, assert_error


def q(path):
    return urllib.parse.quote(path, safe="/")


def put(boxd, path, data, mode=None, headers=None):
    target = f"/v1/files?path={q(path)}" + (f"&mode={mode}" if mode else "")
    response = boxd.request("PUT", target, body=data, headers=headers)
    return response.status, response.json()


def write(path, data=b"x", mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def expected_stat(work, relative):
    full = os.path.join(work, relative)
    st = os.lstat(full)
    kind = ("file" if stat.S_ISREG(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode)
            else "link" if stat.S_ISLNK(st.st_mode) else "other")
    entry = {"path": full, "type": kind, "size": st.st_size,
             "mode": "%04o" % stat.S_IMODE(st.st_mode)}
    if kind == "link":
        entry["target"] = os.readlink(full)
    return entry, st.st_mtime_ns / 1e6


def same_stat(answer, work, relative):
    entry, mtime_ms = expected_stat(work, relative)
    assert {k: answer.get(k) for k in entry} == entry, (answer, entry)
    assert abs(answer["mtimeMs"] - mtime_ms) < 0.01, (answer, mtime_ms)


def test_stat_as_lstat_sees_it(boxd):
    work = boxd.work_dir
    write(os.path.join(work, "app", "a.txt"), b"hello", 0o640)
    os.symlink("a.txt", os.path.join(work, "app", "link"))
    os.mkfifo(os.path.join(work, "app", "fifo"))
    for relative in ["app/a.txt", "app/link", "app/fifo", "app"]:
        status, answer = boxd.call("GET", f"/v1/files/stat?path={relative}")
        assert status == 200, answer
        same_stat(answer, work, relative)
        assert "sha256" not in answer
    status, answer = boxd.call("GET", f"/v1/files/stat?path={q(work)}/app/a.txt&hash=1")
    assert answer["sha256"] == hashlib.sha256(b"hello").hexdigest()
    status, answer = boxd.call("GET", "/v1/files/stat?path=app/link&hash=1")
    assert answer["type"] == "link" and "sha256" not in answer
    status, answer = boxd.call("GET", "/v1/files/stat?path=")
    assert status == 400
    status, answer = boxd.call("GET", f"/v1/files/stat?path={q(work)}")
    assert status == 200 and answer["type"] == "dir" and answer["path"] == work
    assert_error(boxd.call("GET", "/v1/files/stat?path=app/none"), 404, "not_found", "app/none")


def test_hash_of_a_big_file_leaves_the_loop_free(boxd):
    big = os.path.join(boxd.work_dir, "big.bin")
    with open(big, "wb") as f:
        for _ in range(64):
            f.write(os.urandom(1 << 20))
    expected = hashlib.sha256(open(big, "rb").read()).hexdigest()
    assert subprocess.run(["sha256sum", big], capture_output=True, text=True,
                          check=True).stdout.split()[0] == expected
    status, answer = boxd.call("GET", "/v1/files/stat?path=big.bin&hash=1")
    assert status == 200 and answer["sha256"] == expected


def test_list_as_os_walk_sees_it(boxd):
    work = boxd.work_dir
    for name in ["b/z.txt", "b/a.txt", "a/deep/er/f", "c.txt", "b/sub/x"]:
        write(os.path.join(work, "tree", name))
    os.symlink("../b", os.path.join(work, "tree", "a", "to-b"))
    for depth in [1, 2, 8]:
        status, answer = boxd.call("GET", f"/v1/files/list?path=tree&depth={depth}")
        assert status == 200, answer
        seen = []
        root = os.path.join(work, "tree")
        for folder, dirs, files in os.walk(root):
            level = folder[len(root):].count("/") + 1
            if level > depth:
                continue
            seen += [os.path.join(folder, n) for n in dirs + files]
        paths = [e["path"] for e in answer["entries"]]
        assert sorted(paths) == sorted(seen)
        assert paths == sorted(paths, key=lambda p: p.split("/"))  # a folder, then its own
        for entry in answer["entries"]:
            same_stat(entry, work, os.path.relpath(entry["path"], work))
        assert "truncated" not in answer
    link = [e for e in answer["entries"] if e["path"].endswith("to-b")][0]
    assert link["type"] == "link" and link["target"] == "../b"
    assert not [e for e in answer["entries"] if "/to-b/" in e["path"]]  # not followed
    for bad in ["0", "9", "x", ""]:
        assert_error(boxd.call("GET", f"/v1/files/list?path=tree&depth={bad}"), 400,
                     "bad_request", "depth")
    assert_error(boxd.call("GET", "/v1/files/list?path=tree/c.txt"), 400, "bad_request",
                 "not a folder")


def test_list_stops_at_ten_thousand(boxd):
    many = os.path.join(boxd.work_dir, "many")
    os.makedirs(many)
    for i in range(10_050):
        open(os.path.join(many, f"{i:05}"), "w").close()
    status, answer = boxd.call("GET", "/v1/files/list?path=many")
    assert status == 200 and answer["truncated"] is True
    assert len(answer["entries"]) == 10_000
    assert answer["entries"][0]["path"].endswith("/00000")


def test_put_writes_whole_files(boxd):
    work = boxd.work_dir
    status, answer = put(boxd, "new/deep/file.txt", b"one", mode="0750")
    assert status == 200, answer
    path = os.path.join(work, "new", "deep", "file.txt")
    assert open(path, "rb").read() == b"one"
    same_stat(answer, work, "new/deep/file.txt")
    assert answer["mode"] == "0750"
    # Without a mode, a replaced file keeps its own.
    status, answer = put(boxd, "new/deep/file.txt", b"two")
    assert status == 200 and open(path, "rb").read() == b"two" and answer["mode"] == "0750"
    data = os.urandom(100_000)
    digest = hashlib.sha256(data).hexdigest()
    status, answer = put(boxd, f"{work}/new/h.bin", data,
                         headers={"X-Content-SHA256": digest.upper()})
    assert status == 200 and answer["sha256"] == digest
    assert not [n for n in os.listdir(os.path.join(work, "new")) if n.startswith(".boxd")]
    status, answer = put(boxd, "new/h.bin", b"other", headers={"X-Content-SHA256": digest})
    assert status == 400 and "nothing was written" in answer["error"]["message"]
    assert open(os.path.join(work, "new", "h.bin"), "rb").read() == data
    assert not [n for n in os.listdir(os.path.join(work, "new")) if n.startswith(".boxd")]
    assert_error(boxd.call("PUT", "/v1/files?path=new/x", b"x",
                              headers={"X-Content-SHA256": "zz"}), 400, "bad_request",
                 "X-Content-SHA256")
    assert_error(boxd.call("PUT", "/v1/files?path=new", b"x"), 409, "conflict", "folder")
    assert_error(boxd.call("PUT", "/v1/files?path=", b"x"), 400, "bad_request")
    assert_error(boxd.call("PUT", f"/v1/files?path={q(work)}", b"x"), 400, "bad_request")
    steps = [s["summary"] for s in boxd.call("GET", "/v1/steps")[1]["steps"]]
    assert any("new/h.bin" in s for s in steps)


def test_cut_put_leaves_the_old_file(boxd):
    path = os.path.join(boxd.work_dir, "keep.txt")
    write(path, b"old")
    raw = socket.socket(socket.AF_UNIX)
    raw.connect(boxd.socket)
    raw.sendall(b"PUT /v1/files?path=keep.txt HTTP/1.1\r\nHost: x\r\n"
                b"Content-Length: 1000000\r\n\r\n" + b"n" * 300_000)
    time.sleep(0.3)
    raw.close()
    time.sleep(0.3)
    assert open(path, "rb").read() == b"old"
    assert [n for n in os.listdir(boxd.work_dir) if n != ".sbx"] == ["keep.txt"]
    assert boxd.call("GET", "/v1/health")[0] == 200


@pytest.fixture
def small_disk(boxd):
    mount = os.path.join(boxd.work_dir, "small")
    os.makedirs(mount)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mount],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr!r}")
    yield mount
    subprocess.run(["umount", "-l", mount])


def test_full_disk_is_507_and_the_old_file_stays(boxd, small_disk):
    path = os.path.join(small_disk, "f.bin")
    write(path, b"old")
    status, answer = put(boxd, "small/f.bin", b"n" * (3 << 20))
    assert status == 507 and answer["error"]["code"] == "disk_full", answer
    assert open(path, "rb").read() == b"old"
    assert os.listdir(small_disk) == ["f.bin"]


def test_a_big_put_keeps_memory_flat(boxd_factory):
    boxd = boxd_factory(env=FLAT_MEMORY_ENV)
    size = 1 << 30
    chunk = os.urandom(1 << 20)
    digest = hashlib.sha256()
    for _ in range(size // len(chunk)):
        digest.update(chunk)

    def body():
        for _ in range(size // len(chunk)):
            yield chunk

    from conftest import UnixConnection
    connection = UnixConnection(boxd.socket, timeout=300)
    connection.request("PUT", "/v1/files?path=big.bin", body=body(),
                       headers={"Content-Length": str(size),
                                "X-Content-SHA256": digest.hexdigest()})
    response = connection.getresponse()
    answer = response.read()
    assert response.status == 200, answer
    assert os.path.getsize(os.path.join(boxd.work_dir, "big.bin")) == size
    status = open(f"/proc/{boxd.proc.pid}/status").read()
    peak = int(status.split("VmHWM:")[1].split()[0])
    assert peak < 30_000 * MEMORY_SCALE, peak  # kB, for a GiB written


def test_mkdir_move_chmod_delete(boxd):
    work = boxd.work_dir
    status, answer = boxd.call("POST", "/v1/files/mkdir", {"path": "a/b/c", "parents": True})
    assert status == 200 and os.path.isdir(os.path.join(work, "a/b/c"))
    same_stat(answer, work, "a/b/c")
    assert boxd.call("POST", "/v1/files/mkdir", {"path": "a/b/c", "parents": True})[0] == 200
    assert_error(boxd.call("POST", "/v1/files/mkdir", {"path": "a/b/c"}), 409, "conflict")
    assert_error(boxd.call("POST", "/v1/files/mkdir", {"path": "x/y"}), 404, "not_found")
    write(os.path.join(work, "a/f.txt"), b"f")
    write(os.path.join(work, "a/g.txt"), b"g")
    assert_error(boxd.call("POST", "/v1/files/move", {"from": "a/f.txt", "to": "a/g.txt"}),
                 409, "conflict", "overwrite")
    status, answer = boxd.call("POST", "/v1/files/move",
                               {"from": "a/f.txt", "to": "a/b/g.txt"})
    assert status == 200 and open(os.path.join(work, "a/b/g.txt")).read() == "f"
    status, answer = boxd.call("POST", "/v1/files/move",
                               {"from": "a/b/g.txt", "to": "a/g.txt", "overwrite": True})
    assert status == 200 and open(os.path.join(work, "a/g.txt")).read() == "f"
    assert_error(boxd.call("POST", "/v1/files/move", {"from": "a", "to": "a/b/c/a"}), 400,
                 "bad_request", "itself")
    assert_error(boxd.call("POST", "/v1/files/move", {"from": "nope", "to": "x"}), 404,
                 "not_found")
    status, answer = boxd.call("POST", "/v1/files/chmod", {"path": "a/g.txt", "mode": "0600"})
    assert status == 200 and stat.S_IMODE(os.lstat(os.path.join(work, "a/g.txt")).st_mode) == 0o600
    assert answer["mode"] == "0600"
    os.symlink("g.txt", os.path.join(work, "a", "ln"))
    assert_error(boxd.call("POST", "/v1/files/chmod", {"path": "a/ln", "mode": "0600"}), 400,
                 "bad_request", "symbolic link")
    assert_error(boxd.call("DELETE", "/v1/files?path=a"), 409, "conflict", "recursive")
    status, answer = boxd.call("DELETE", "/v1/files?path=a/ln")
    assert status == 200 and os.path.exists(os.path.join(work, "a/g.txt"))
    # A link inside the tree to a folder outside it: removed, never followed.
    outside = tempfile.mkdtemp()
    write(os.path.join(outside, "precious"), b"p")
    os.symlink(outside, os.path.join(work, "a", "b", "out"))
    status, answer = boxd.call("DELETE", "/v1/files?path=a&recursive=1")
    assert status == 200 and answer["removed"] == 5, answer
    assert not os.path.exists(os.path.join(work, "a"))
    assert open(os.path.join(outside, "precious")).read() == "p"
    shutil.rmtree(outside)
    assert_error(boxd.call("DELETE", "/v1/files?path=a"), 404, "not_found")
    assert_error(boxd.call("DELETE", f"/v1/files?path={q(work)}&recursive=1"), 400,
                 "bad_request", "work dir itself")
    assert_error(boxd.call("DELETE", "/v1/files?path=.&recursive=1"), 400, "bad_request")
    assert os.path.isdir(work)


def test_links_out_of_the_work_dir_are_refused(boxd):
    work = boxd.work_dir
    outside = tempfile.mkdtemp()
    try:
        write(os.path.join(outside, "secret"), b"s")
        os.symlink(outside, os.path.join(work, "out"))
        os.symlink(os.path.join(work, "in"), os.path.join(work, "absolute-in"))
        os.makedirs(os.path.join(work, "in"))
        os.symlink("in", os.path.join(work, "relative-in"))
        calls = [("GET", "/v1/files/stat?path=out/secret", None),
                 ("GET", "/v1/files/list?path=out", None),
                 ("PUT", "/v1/files?path=out/new", b"x"),
                 ("PUT", "/v1/files?path=out/secret", b"x"),
                 ("DELETE", "/v1/files?path=out/secret", None),
                 ("POST", "/v1/files/mkdir", {"path": "out/d", "parents": True}),
                 ("POST", "/v1/files/move", {"from": "out/secret", "to": "stolen"}),
                 ("POST", "/v1/files/chmod", {"path": "out/secret", "mode": "0777"}),
                 ("GET", "/v1/files/stat?path=absolute-in/x", None)]
        for method, target, body in calls:
            status, answer = boxd.call(method, target, body)
            assert status == 400 and "outside the work dir" in answer["error"]["message"], \
                (target, answer)
        assert os.listdir(outside) == ["secret"]
        assert open(os.path.join(outside, "secret")).read() == "s"
        assert stat.S_IMODE(os.stat(os.path.join(outside, "secret")).st_mode) == 0o644
        # The link itself is the user's, and a link that stays inside is followed.
        assert boxd.call("GET", "/v1/files/stat?path=out")[1]["type"] == "link"
        assert put(boxd, "relative-in/f", b"in")[0] == 200
        assert open(os.path.join(work, "in", "f")).read() == "in"
    finally:
        shutil.rmtree(outside)


def test_writes_are_the_box_users(boxd_factory):
    nobody = pwd.getpwnam("nobody")
    boxd = boxd_factory("--user", "nobody")
    work = boxd.work_dir
    os.chmod(work, 0o755)
    os.makedirs(os.path.join(work, "root-only"), mode=0o755)
    write(os.path.join(work, "root-only", "f"), b"root")
    os.makedirs(os.path.join(work, "theirs"))
    os.chown(os.path.join(work, "theirs"), nobody.pw_uid, nobody.pw_gid)
    for method, target, body in [
            ("PUT", "/v1/files?path=root-only/new", b"x"),
            ("PUT", "/v1/files?path=root-only/f", b"x"),
            ("POST", "/v1/files/mkdir", {"path": "root-only/d"}),
            ("DELETE", "/v1/files?path=root-only/f", None),
            ("POST", "/v1/files/chmod", {"path": "root-only/f", "mode": "0777"}),
            ("POST", "/v1/files/move", {"from": "root-only/f", "to": "theirs/f"})]:
        status, answer = boxd.call(method, target, body)
        assert status == 403 and answer["error"]["code"] == "forbidden", (target, answer)
        assert "box user" in answer["error"]["message"]
    assert open(os.path.join(work, "root-only", "f")).read() == "root"
    assert os.listdir(os.path.join(work, "root-only")) == ["f"]
    status, answer = put(boxd, "theirs/sub/new.txt", b"mine")
    assert status == 200, answer
    for made in ["theirs/sub", "theirs/sub/new.txt"]:
        st = os.stat(os.path.join(work, made))
        assert (st.st_uid, st.st_gid) == (nobody.pw_uid, nobody.pw_gid), made
    # boxd's own identity came back: reads still see root's files.
    assert boxd.call("GET", "/v1/files/stat?path=root-only/f&hash=1")[0] == 200


def test_writes_wait_for_the_person_at_the_screen(boxd):
    write(os.path.join(boxd.work_dir, "f.txt"), b"f")
    status, lock = boxd.call("PUT", "/v1/lock", {"locked": True, "note": "mine"})
    assert status == 200
    for method, target, body in [("PUT", "/v1/files?path=g", b"x"),
                                 ("DELETE", "/v1/files?path=f.txt", None),
                                 ("POST", "/v1/files/mkdir", {"path": "d"}),
                                 ("POST", "/v1/files/move", {"from": "f.txt", "to": "g"}),
                                 ("POST", "/v1/files/chmod", {"path": "f.txt", "mode": "0600"})]:
        assert_error(boxd.call(method, target, body), 423, "locked")
    assert boxd.call("GET", "/v1/files/stat?path=f.txt")[0] == 200
    assert boxd.call("GET", "/v1/files/list?path=.")[0] == 200
    assert boxd.call("PUT", "/v1/lock", {"locked": False})[0] == 200
    assert [n for n in os.listdir(boxd.work_dir) if n != ".sbx"] == ["f.txt"]


def test_hostile_inputs_are_clear_400s(boxd):
    work = boxd.work_dir
    write(os.path.join(work, "f.txt"), b"f")
    long_name = "n" * 256
    long_path = "/".join(["d" * 200] * 21)
    for target in ["/v1/files/stat?path=../etc/passwd", "/v1/files/stat?path=/etc/passwd",
                   "/v1/files/stat?path=a/../../x", "/v1/files/stat?path=f.txt%00.png",
                   f"/v1/files/stat?path={long_name}", f"/v1/files/stat?path={long_path}",
                   "/v1/files/list?path=..", "/v1/files?path=f.txt%00x&mode=0644"]:
        method = "PUT" if target.startswith("/v1/files?") else "GET"
        status, answer = boxd.call(method, target, b"x" if method == "PUT" else None)
        assert status == 400 and answer["error"]["code"] == "bad_request", (target, answer)
        assert answer["error"]["message"], target
    for mode in ["8", "10000", "-1", "rwx", "0x1ff", "", "077777"]:
        assert_error(boxd.call("PUT", f"/v1/files?path=g&mode={q(mode)}", b"x"), 400,
                     "bad_request", "mode")
        assert_error(boxd.call("POST", "/v1/files/chmod", {"path": "f.txt", "mode": mode}), 400,
                     "bad_request", "mode")
    assert_error(boxd.call("POST", "/v1/files/chmod", {"path": "f.txt", "mode": 420}), 400,
                 "bad_request", "octal")
    assert_error(boxd.call("POST", "/v1/files/mkdir", {"path": "a\u0000b"}), 400,
                 "bad_request", "NUL")
    assert_error(boxd.call("POST", "/v1/files/mkdir", {"path": 7}), 400, "bad_request")
    assert_error(boxd.call("POST", "/v1/files/mkdir", {"path": "d", "parents": "yes"}), 400,
                 "bad_request")
    assert_error(boxd.call("POST", "/v1/files/move", {"from": "f.txt"}), 400, "bad_request")
    assert_error(boxd.call("POST", "/v1/files/move", b"{not json"), 400, "bad_request")
    assert [n for n in os.listdir(work) if n != ".sbx"] == ["f.txt"]
    assert open(os.path.join(work, "f.txt")).read() == "f"


def test_names_that_are_not_utf8(boxd):
    work = boxd.work_dir.encode()
    os.makedirs(os.path.join(work, b"odd"))
    with open(os.path.join(work, b"odd", b"caf\xe9.txt"), "wb") as f:
        f.write(b"x")
    status, answer = boxd.call("GET", "/v1/files/list?path=odd")
    entry = answer["entries"][0]
    assert entry["path"].endswith("/odd/caf\ufffd.txt")
    assert bytes.fromhex(entry["pathHex"]) == os.path.join(work, b"odd", b"caf\xe9.txt")
    status, answer = boxd.call("GET", "/v1/files/stat?path=odd/caf%E9.txt")
    assert status == 200 and answer["type"] == "file" and "pathHex" in answer


def test_etag_and_conditional_gets(boxd):
    path = os.path.join(boxd.work_dir, "e.bin")
    data = os.urandom(50_000)
    write(path, data)
    response = boxd.request("GET", "/v1/files?path=e.bin")
    etag = response.headers["etag"]
    assert response.status == 200 and etag.startswith('"') and etag.endswith('"')
    assert boxd.request("GET", "/v1/files?path=e.bin").headers["etag"] == etag
    for header in [etag, "*", f'"other", {etag}', f"W/{etag}"]:
        response = boxd.request("GET", "/v1/files?path=e.bin", headers={"If-None-Match": header})
        assert response.status == 304 and response.body == b"", header
        assert response.headers["etag"] == etag and "content-length" not in response.headers
    response = boxd.request("GET", "/v1/files?path=e.bin", headers={"If-None-Match": '"other"'})
    assert response.status == 200 and response.body == data
    # If-Range: the range while the file is the same, the whole file once it changed.
    response = boxd.request("GET", "/v1/files?path=e.bin",
                            headers={"Range": "bytes=0-9", "If-Range": etag})
    assert response.status == 206 and response.body == data[:10]
    assert put(boxd, "e.bin", b"new")[0] == 200
    response = boxd.request("GET", "/v1/files?path=e.bin",
                            headers={"Range": "bytes=0-1", "If-Range": etag})
    assert response.status == 200 and response.body == b"new"
    assert response.headers["etag"] != etag
    assert boxd.request("GET", "/v1/files?path=e.bin",
                        headers={"If-None-Match": etag}).status == 200
    for header, expected in [("bytes=1-", b"ew"), ("bytes=-1", b"w"), ("bytes=0-0", b"n")]:
        response = boxd.request("GET", "/v1/files?path=e.bin", headers={"Range": header})
        assert response.status == 206 and response.body == expected
    assert boxd.request("GET", "/v1/files?path=e.bin", headers={"Range": "bytes=3-"}).status == 416


def test_boxctl_files(boxd, tmp_path):
    work = boxd.work_dir
    local = tmp_path / "local.txt"
    local.write_bytes(b"from here")

    def ok(*args, input=None):
        done = boxd.boxctl("files", *args, input=input)
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout.decode()

    assert "sub/put.txt" in ok("put", str(local), "sub/put.txt", "--mode", "0600")
    assert open(os.path.join(work, "sub/put.txt"), "rb").read() == b"from here"
    assert stat.S_IMODE(os.stat(os.path.join(work, "sub/put.txt")).st_mode) == 0o600
    ok("put", "-", "sub/stdin.txt", input=b"piped")
    assert open(os.path.join(work, "sub/stdin.txt"), "rb").read() == b"piped"
    assert hashlib.sha256(b"piped").hexdigest() in ok("stat", "sub/stdin.txt", "--hash")
    ok("mkdir", "-p", "sub/a/b")
    assert os.path.isdir(os.path.join(work, "sub/a/b"))
    listing = ok("ls", "sub", "--depth", "2")
    assert "sub/a/b" in listing and "sub/put.txt" in listing
    ok("mv", "sub/stdin.txt", "sub/a/moved.txt")
    assert os.path.exists(os.path.join(work, "sub/a/moved.txt"))
    ok("chmod", "0640", "sub/a/moved.txt")
    assert stat.S_IMODE(os.stat(os.path.join(work, "sub/a/moved.txt")).st_mode) == 0o640
    assert ok("get", "sub/a/moved.txt") == "piped"
    answer = json_of(boxd.boxctl("--json", "files", "stat", "sub/a/moved.txt"))
    assert answer["type"] == "file" and answer["mode"] == "0640"
    done = boxd.boxctl("files", "rm", "sub")
    assert done.returncode == 1 and b"recursive" in done.stderr
    ok("rm", "-r", "sub")
    assert not os.path.exists(os.path.join(work, "sub"))
    done = boxd.boxctl("files", "stat", "../x")
    assert done.returncode == 1 and b"contains .." in done.stderr or b".." in done.stderr
    assert boxd.boxctl("files", "frob").returncode == 2
    assert boxd.boxctl("files", "chmod", "0644").returncode == 2


def json_of(done):
    import json
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
