"""POST /v1/sync/upload and /v1/uploads: extraction, hostile archives,
resumable uploads."""
import gzip
import io
import json
import os
import socket
import stat
import subprocess
import tarfile
import time

import pytest

from conftest import FLAT_MEMORY_ENV, MEMORY_SCALE, UnixConnection, assert_error
from synclib import member, snapshot, tar_gz


def upload(boxd, dest, data, timeout=120):
    return boxd.call("POST", f"/v1/sync/upload?dest={dest}", data,
                     headers={"Content-Type": "application/gzip"}, timeout=timeout)


def outside_of(boxd, tmp_path):
    """A directory beside the work dir that hostile archives aim at."""
    target = tmp_path / "outside"
    target.mkdir(exist_ok=True)
    (target / "victim").write_bytes(b"untouched")
    return target


def test_extracts_with_modes_links_and_nesting(boxd):
    data = tar_gz([
        member("./", tarfile.DIRTYPE, mode=0o755),
        member("./bin/", tarfile.DIRTYPE, mode=0o755),
        member("./bin/run.sh", data=b"#!/bin/sh\n", mode=0o755),
        member("./README", data=b"hi\n", mode=0o644),
        member("./setuid", data=b"x", mode=0o4755),
        member("./link", tarfile.SYMTYPE, linkname="README"),
        member("./hard", tarfile.LNKTYPE, linkname="./README"),
        member("caf\udce9", data=b"latin-1\n"),
    ])
    status, answer = upload(boxd, "app", data)
    assert status == 200, answer
    assert answer == {"ok": True, "dest": "app", "files": 6, "bytes": 22}
    app = os.path.join(boxd.work_dir, "app")
    assert stat.S_IMODE(os.stat(os.path.join(app, "bin/run.sh")).st_mode) == 0o755
    assert stat.S_IMODE(os.stat(os.path.join(app, "README")).st_mode) == 0o644
    assert stat.S_IMODE(os.stat(os.path.join(app, "setuid")).st_mode) == 0o755  # set-id dropped
    assert os.readlink(os.path.join(app, "link")) == "README"
    assert os.stat(os.path.join(app, "hard")).st_ino == os.stat(os.path.join(app, "README")).st_ino
    assert open(os.path.join(os.fsencode(app), b"caf\xe9"), "rb").read() == b"latin-1\n"
    assert os.stat(os.path.join(app, "README")).st_mtime == 1_700_000_000
    # Over what is there; what the archive does not name stays.
    status, answer = upload(boxd, "app", tar_gz([member("README", data=b"new\n")]))
    assert status == 200 and answer["files"] == 1
    assert open(os.path.join(app, "README"), "rb").read() == b"new\n"
    assert os.path.exists(os.path.join(app, "bin/run.sh"))
    assert not [n for n in os.listdir(app) if ".boxd-" in n]
    kinds = [s["kind"] for s in boxd.call("GET", "/v1/steps")[1]["steps"]]
    assert "upload" in kinds


HOSTILE = {
    "absolute": [member("/abs-victim", data=b"x")],
    "dotdot": [member("../outside/victim", data=b"pwned")],
    "dotdot-inside": [member("a/../../outside/victim", data=b"pwned")],
    "symlink-then-write": [member("esc", tarfile.SYMTYPE, linkname="{outside}"),
                           member("esc/victim", data=b"pwned")],
    "relative-symlink-then-write": [member("esc", tarfile.SYMTYPE, linkname="../../outside"),
                                    member("esc/victim", data=b"pwned")],
    "hardlink-outside-absolute": [member("h", tarfile.LNKTYPE, linkname="{outside}/victim")],
    "hardlink-outside-dotdot": [member("h", tarfile.LNKTYPE, linkname="../outside/victim")],
    "hardlink-through-symlink": [member("esc", tarfile.SYMTYPE, linkname="{outside}"),
                                 member("h", tarfile.LNKTYPE, linkname="esc/victim")],
    # A link the archive made is never written through, even one that
    # stays inside dest.
    "symlink-inside-then-write": [member("sub/", tarfile.DIRTYPE, mode=0o755),
                                  member("in", tarfile.SYMTYPE, linkname="sub"),
                                  member("in/x", data=b"x")],
    "symlink-then-deeper-write": [member("esc", tarfile.SYMTYPE, linkname="{outside}"),
                                  member("esc/new/victim", data=b"pwned")],
    "char-device": [member("null", tarfile.CHRTYPE)],
    "block-device": [member("disk", tarfile.BLKTYPE)],
    "fifo": [member("pipe", tarfile.FIFOTYPE)],
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archives_are_refused(boxd, tmp_path, case):
    outside = outside_of(boxd, tmp_path)
    os.makedirs(os.path.join(boxd.work_dir, "app"))
    members = []
    for info, data in HOSTILE[case]:
        info.linkname = info.linkname.replace("{outside}", str(outside))
        members.append((info, data))
    changing = (os.path.join(boxd.work_dir, "app"), boxd.run_dir, boxd.log_path)
    before = snapshot(str(tmp_path), skip=changing)
    status, answer = upload(boxd, "app", tar_gz(members))
    assert_error((status, answer), 400, "bad_request")
    assert answer["error"]["code"] == "bad_request"
    assert "archive entry" in answer["error"]["message"]
    assert before == snapshot(str(tmp_path), skip=changing)
    assert open(outside / "victim", "rb").read() == b"untouched"
    assert not os.path.exists("/abs-victim")


def test_truncated_gzip_keeps_the_old_file(boxd):
    app = os.path.join(boxd.work_dir, "app")
    os.makedirs(app)
    with open(os.path.join(app, "keep.txt"), "wb") as f:
        f.write(b"old and good")
    data = tar_gz([member("first.txt", data=b"1"), member("keep.txt", data=os.urandom(200_000))])
    status, answer = upload(boxd, "app", data[: len(data) // 2])
    assert_error((status, answer), 400, "bad_request")
    assert "truncated" in answer["error"]["message"] or "complete" in answer["error"]["message"]
    assert open(os.path.join(app, "keep.txt"), "rb").read() == b"old and good"
    assert not [n for n in os.listdir(app) if ".boxd-" in n]


def test_garbage_is_refused(boxd):
    status, answer = upload(boxd, "app", b"this is not a tar.gz at all" * 100)
    assert_error((status, answer), 400, "bad_request")
    status, answer = upload(boxd, "app", gzip.compress(b"not a tar" * 1000))
    assert_error((status, answer), 400, "bad_request")


def test_dest_named_outside_the_work_dir_is_refused(boxd, tmp_path):
    outside_of(boxd, tmp_path)
    for dest in ["../outside", "/etc", "a/../../outside"]:
        status, answer = upload(boxd, dest, tar_gz([member("victim", data=b"pwned")]))
        assert_error((status, answer), 400, "bad_request", dest)
    assert open(tmp_path / "outside" / "victim", "rb").read() == b"untouched"


def test_dest_that_is_a_symlink_is_followed(boxd, tmp_path):
    """A dest the box has as a symlink (out of the work dir or inside it) is
    the user's own layout: written through, as tar -C writes through it."""
    outside = outside_of(boxd, tmp_path)
    os.symlink(str(outside), os.path.join(boxd.work_dir, "esc"))
    status, answer = upload(boxd, "esc", tar_gz([member("new.txt", data=b"hello")]))
    assert status == 200, answer
    assert (outside / "new.txt").read_bytes() == b"hello"
    assert os.path.islink(os.path.join(boxd.work_dir, "esc"))
    status, answer = upload(boxd, "esc/deeper", tar_gz([member("x", data=b"x")]))
    assert status == 200, answer
    assert (outside / "deeper" / "x").read_bytes() == b"x"
    os.makedirs(os.path.join(boxd.work_dir, "real"))
    os.symlink("real", os.path.join(boxd.work_dir, "alias"))
    assert upload(boxd, "alias", tar_gz([member("y", data=b"y")]))[0] == 200
    assert open(os.path.join(boxd.work_dir, "real", "y"), "rb").read() == b"y"
    os.symlink("nowhere", os.path.join(boxd.work_dir, "dangling"))
    status, answer = upload(boxd, "dangling", tar_gz([member("z", data=b"z")]))
    assert status == 400 and answer["error"]["code"] == "bad_request", answer


def test_directory_symlinks_the_box_has_are_followed(boxd, tmp_path):
    """node_modules -> ../nm-out and a link out of the work dir: files go
    where the links lead (as GNU tar puts them), the links stay, and only
    the archive's own names are created on the way."""
    app = os.path.join(boxd.work_dir, "app")
    os.makedirs(os.path.join(boxd.work_dir, "nm-out"))
    os.makedirs(app)
    os.symlink("../nm-out", os.path.join(app, "node_modules"))
    vendor = tmp_path / "vendor-out"
    vendor.mkdir()
    os.symlink(str(vendor), os.path.join(app, "vendor"))
    os.symlink("../missing", os.path.join(app, "broken"))
    data = tar_gz([member("node_modules/pkg/index.js", data=b"module.exports = 1\n"),
                   member("node_modules/pkg/bin/cli", data=b"#!/bin/sh\n", mode=0o755),
                   member("vendor/lib/a.c", data=b"int a;\n")])
    status, answer = upload(boxd, "app", data)
    assert status == 200 and answer["files"] == 3, answer
    assert os.readlink(os.path.join(app, "node_modules")) == "../nm-out"
    assert open(os.path.join(boxd.work_dir, "nm-out/pkg/index.js"), "rb").read() == b"module.exports = 1\n"
    assert os.stat(os.path.join(boxd.work_dir, "nm-out/pkg/bin/cli")).st_mode & 0o777 == 0o755
    assert (vendor / "lib" / "a.c").read_bytes() == b"int a;\n"
    # A link to nothing is not made into a directory: refused, as tar fails.
    status, answer = upload(boxd, "app", tar_gz([member("broken/x", data=b"x")]))
    assert status == 400 and "broken/x" in answer["error"]["message"], answer
    assert not os.path.exists(os.path.join(boxd.work_dir, "missing"))


def test_box_link_leading_through_an_archive_link_is_refused(boxd, tmp_path):
    """The box's old -> new, where the archive makes new -> outside: the
    write through old would pass the archive's own link, so it is refused."""
    outside = outside_of(boxd, tmp_path)
    app = os.path.join(boxd.work_dir, "app")
    os.makedirs(app)
    os.symlink("new", os.path.join(app, "old"))
    data = tar_gz([member("new", tarfile.SYMTYPE, linkname=str(outside)),
                   member("old/victim", data=b"pwned")])
    status, answer = upload(boxd, "app", data)
    assert status == 400 and "old/victim" in answer["error"]["message"], answer
    assert (outside / "victim").read_bytes() == b"untouched"


def test_upload_writes_as_the_box_user(boxd_factory):
    """With --user, files are written with the box user's rights: through a
    link of the box's, only where that user could write anyway."""
    import pathlib
    import pwd
    import shutil
    import tempfile
    nobody = pwd.getpwnam("nobody")
    boxd = boxd_factory("--user", "nobody")
    base = pathlib.Path(tempfile.mkdtemp(prefix="boxd-user-"))
    try:
        os.chmod(base, 0o755)
        (base / "root-only").mkdir(mode=0o755)
        (base / "theirs").mkdir()
        os.chown(base / "theirs", nobody.pw_uid, nobody.pw_gid)
        app = os.path.join(boxd.work_dir, "app")
        os.makedirs(app)
        os.chown(app, nobody.pw_uid, nobody.pw_gid)
        os.symlink(str(base / "root-only"), os.path.join(app, "etc"))
        os.symlink(str(base / "theirs"), os.path.join(app, "theirs"))
        status, answer = upload(boxd, "app", tar_gz([member("etc/evil.conf", data=b"x")]))
        assert status == 400 and "Permission denied" in answer["error"]["message"], answer
        assert os.listdir(base / "root-only") == []
        data = tar_gz([member("theirs/ok.txt", data=b"ok"), member("here/new.txt", data=b"new")])
        status, answer = upload(boxd, "app", data)
        assert status == 200, answer
        for path in [base / "theirs" / "ok.txt", pathlib.Path(app) / "here",
                     pathlib.Path(app) / "here" / "new.txt"]:
            st = os.stat(path)
            assert (st.st_uid, st.st_gid) == (nobody.pw_uid, nobody.pw_gid), path
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_file_where_a_directory_is(boxd):
    os.makedirs(os.path.join(boxd.work_dir, "app", "thing", "inside"))
    status, answer = upload(boxd, "app", tar_gz([member("thing", data=b"x")]))
    assert status == 400 and "thing" in answer["error"]["message"]


def test_tar_bomb_of_empty_files(boxd, tmp_path):
    import io
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo()
        for i in range(100_000):
            info.name = f"f{i}"
            tar.addfile(info)
    status, answer = upload(boxd, "bomb", out.getvalue(), timeout=300)
    assert status == 200, answer
    assert answer["files"] == 100_000 and answer["bytes"] == 0
    assert len(os.listdir(os.path.join(boxd.work_dir, "bomb"))) == 100_000


def test_sparse_ten_gib_entry(boxd, tmp_path):
    source = tmp_path / "sparse"
    source.mkdir()
    with open(source / "big", "wb") as f:
        f.truncate(10 << 30)
        f.seek(5 << 30)
        f.write(b"middle")
    archive = tmp_path / "sparse.tgz"
    subprocess.run(["tar", "--sparse", "-czf", str(archive), "-C", str(source), "big"], check=True)
    assert archive.stat().st_size < 1 << 20
    status, answer = upload(boxd, "sparse", archive.read_bytes(), timeout=300)
    assert status == 200, answer
    big = os.path.join(boxd.work_dir, "sparse", "big")
    st = os.stat(big)
    assert st.st_size == 10 << 30
    assert st.st_blocks * 512 < 64 << 20  # holes stayed holes
    with open(big, "rb") as f:
        f.seek(5 << 30)
        assert f.read(6) == b"middle"


def test_locked_upload_is_refused(boxd):
    assert boxd.call("PUT", "/v1/lock", {"locked": True})[0] == 200
    status, answer = upload(boxd, "app", tar_gz([member("a", data=b"a")]))
    assert status == 423 and answer["error"]["code"] == "locked"
    assert_error(boxd.call("POST", "/v1/uploads?dest=app"), 423, "locked")
    assert boxd.call("PUT", "/v1/lock", {"locked": False})[0] == 200


def complete(answer):
    head, found, body = answer.partition(b"\r\n\r\n")
    return found and b"Content-Length: " in head and \
        len(body) >= int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])


def peak_rss_kib(boxd):
    return int(open(f"/proc/{boxd.proc.pid}/status").read().split("VmHWM:")[1].split()[0])


def test_single_request_has_no_size_limit(boxd_factory):
    """Past the 64 MiB evhttp once allowed: one request of 80 MiB streams
    into the worker as it arrives; boxd holds none of it."""
    boxd = boxd_factory(env=FLAT_MEMORY_ENV)
    content = os.urandom(80 << 20)
    data = tar_gz([member("big.bin", data=content)])
    del content
    status, answer = upload(boxd, "huge", data)
    assert status == 200, answer
    assert answer["files"] == 1 and answer["bytes"] == 80 << 20
    assert os.path.getsize(os.path.join(boxd.work_dir, "huge", "big.bin")) == 80 << 20
    assert peak_rss_kib(boxd) < 16 * 1024 * MEMORY_SCALE


def chunked(data, size=1 << 16):
    for at in range(0, len(data), size):
        piece = data[at:at + size]
        yield b"%x\r\n%s\r\n" % (len(piece), piece)
    yield b"0\r\n\r\n"


def test_single_request_streamed_chunked(boxd):
    """The real client streams a first sync as one chunked request, with no
    length up front: it is extracted as it arrives."""
    files = [member(f"dir/f{i}", data=os.urandom(100_000)) for i in range(30)]
    data = tar_gz(files)
    raw = socket.socket(socket.AF_UNIX)
    raw.settimeout(30)
    raw.connect(boxd.socket)
    raw.sendall(b"POST /v1/sync/upload?dest=chunky HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/gzip\r\nTransfer-Encoding: chunked\r\n\r\n")
    for piece in chunked(data):
        raw.sendall(piece)
    answer = b""
    while not complete(answer):
        got = raw.recv(4096)
        assert got, answer
        answer += got
    raw.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer
    assert json.loads(answer.partition(b"\r\n\r\n")[2]) == \
        {"ok": True, "dest": "chunky", "files": 30, "bytes": 3_000_000}
    for info, content in files:
        assert open(os.path.join(boxd.work_dir, "chunky", info.name), "rb").read() == content


def test_a_refused_upload_is_answered_after_its_body_then_closed(boxd):
    """A bad dest is refused from the head: the body is read to its end and
    dropped, the client reads the JSON 400 rather than a failed write, then
    boxd closes."""
    raw = socket.socket(socket.AF_UNIX)
    raw.settimeout(30)
    raw.connect(boxd.socket)
    raw.sendall(b"POST /v1/sync/upload?dest=../out HTTP/1.1\r\nHost: x\r\n"
                b"Content-Length: %d\r\n\r\n" % (1 << 20) + b"\0" * (1 << 20))
    answer = b""
    while chunk := raw.recv(4096):
        answer += chunk
    raw.close()
    assert answer.startswith(b"HTTP/1.1 400") and b"Connection: close" in answer, answer
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"] == "bad_request"


# ---- early answers to streamed bodies ----

@pytest.fixture(scope="module")
def forty_mb():
    return os.urandom(40 << 20)


def archive_with(first, content):
    """A tar.gz of `first` (a member), then 40 MB of `content`."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.GNU_FORMAT, compresslevel=1) as tar:
        for info, data in (first, member("big.bin", data=content)):
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def write_then_read(boxd, method, path, data, chunked_encoding, headers=None):
    """Python's http.client writing `data` in 64 KiB pieces, as a client
    piping an archive into its request does, then reading the answer:
    (status, body as JSON, seconds taken)."""
    connection = UnixConnection(boxd.socket, timeout=60)
    pieces = (data[at:at + (1 << 16)] for at in range(0, len(data), 1 << 16))
    head = {"Content-Type": "application/gzip", **(headers or {})}
    if not chunked_encoding:
        head["Content-Length"] = str(len(data))
    started = time.monotonic()
    try:
        connection.request(method, path, body=pieces, headers=head, encode_chunked=chunked_encoding)
        response = connection.getresponse()
        return response.status, json.loads(response.read()), time.monotonic() - started
    finally:
        connection.close()


@pytest.mark.parametrize("chunked_encoding", [True, False], ids=["chunked", "length"])
@pytest.mark.parametrize("refusal", ["dotdot", "absolute", "permission"])
def test_an_upload_refused_at_its_first_entry_still_reads_its_body(boxd_factory, forty_mb,
                                                                   refusal, chunked_encoding):
    """The worker refuses the first entry of a 40 MB archive and boxd has its
    answer at once; the client is still writing. boxd reads the rest of the
    body and drops it, so the writer finishes and reads the 400 (it used to
    be cut off after 16 MiB with a broken pipe)."""
    boxd = boxd_factory(*(["--user", "nobody"] if refusal == "permission" else []))
    if refusal == "permission":
        os.makedirs(os.path.join(boxd.work_dir, "app"), mode=0o755)  # root's: nobody may not write
    first = {"dotdot": "../evil", "absolute": "/tmp/evil", "permission": "first.txt"}[refusal]
    data = archive_with(member(first, data=b"x"), forty_mb)
    status, answer, took = write_then_read(boxd, "POST", "/v1/sync/upload?dest=app", data,
                                           chunked_encoding)
    assert status == 400 and answer["error"]["code"] == "bad_request", answer
    assert "Permission denied" in answer["error"]["message"] if refusal == "permission" else \
        first.lstrip("/").split("/")[0] in answer["error"]["message"], answer
    assert took < 20, took
    assert not os.path.exists(os.path.join(boxd.work_dir, "app", "big.bin"))
    assert boxd.call("GET", "/v1/health")[0] == 200


def test_a_resumable_piece_refused_from_its_head_still_reads_its_body(boxd, forty_mb):
    """A wrong Upload-Offset or an unknown id is answered before a byte of
    the piece is read; the 40 MB piece is read and dropped all the same."""
    upload_id = boxd.call("POST", "/v1/uploads?dest=r")[1]["uploadId"]
    status, answer, _ = write_then_read(boxd, "PUT", f"/v1/uploads/{upload_id}", forty_mb, True,
                                        {"Upload-Offset": "7"})
    assert status == 409 and "Upload-Offset: 0" in answer["error"]["message"], answer
    status, answer, _ = write_then_read(boxd, "PUT", "/v1/uploads/" + "0" * 32, forty_mb, False,
                                        {"Upload-Offset": "0"})
    assert status == 404 and answer["error"]["code"] == "not_found", answer
    response = boxd.request("HEAD", f"/v1/uploads/{upload_id}")
    assert response.headers["upload-offset"] == "0"


def put_piece(boxd, upload_id, offset, data):
    return boxd.call("PUT", f"/v1/uploads/{upload_id}", data,
                     headers={"Upload-Offset": str(offset), "Content-Type": "application/octet-stream"})


def test_resumable_upload_interrupted_and_resumed(boxd):
    files = [member(f"dir/f{i}", data=os.urandom(50_000)) for i in range(40)]
    data = tar_gz(files)
    status, answer = boxd.call("POST", "/v1/uploads?dest=big")
    assert status == 200, answer
    upload_id = answer["uploadId"]
    third = len(data) // 3
    assert put_piece(boxd, upload_id, 0, data[:third]) == (200, {"offset": third})
    # A piece cut off mid-body: nothing of it counts.
    raw = socket.socket(socket.AF_UNIX)
    raw.connect(boxd.socket)
    raw.sendall(b"PUT /v1/uploads/%s HTTP/1.1\r\nHost: x\r\nUpload-Offset: %d\r\n"
                b"Content-Length: %d\r\n\r\n" % (upload_id.encode(), third, len(data) - third)
                + data[third:third + 1000])
    raw.close()
    response = boxd.request("HEAD", f"/v1/uploads/{upload_id}")
    assert response.status == 200 and response.headers["upload-offset"] == str(third)
    # The wrong offset is refused with the right one.
    status, answer = put_piece(boxd, upload_id, third + 5, data[third + 5:])
    assert status == 409 and str(third) in answer["error"]["message"]
    assert put_piece(boxd, upload_id, third, data[third:2 * third])[1] == {"offset": 2 * third}
    assert put_piece(boxd, upload_id, 2 * third, data[2 * third:])[1] == {"offset": len(data)}
    status, answer = boxd.call("POST", f"/v1/uploads/{upload_id}/finish")
    assert status == 200, answer
    assert answer == {"ok": True, "dest": "big", "files": 40, "bytes": 40 * 50_000}
    for info, content in files:
        assert open(os.path.join(boxd.work_dir, "big", info.name), "rb").read() == content
    assert_error(boxd.call("POST", f"/v1/uploads/{upload_id}/finish"), 404, "not_found")
    assert os.listdir(os.path.join(boxd.work_dir, ".sbx", "uploads")) == []


def test_resumable_upload_unknown_ids(boxd):
    assert_error(boxd.call("PUT", "/v1/uploads/nothex", b"x", headers={"Upload-Offset": "0"}), 404, "not_found")
    assert boxd.request("HEAD", "/v1/uploads/" + "0" * 32).status == 404
    status, answer = boxd.call("POST", "/v1/uploads?dest=../x")
    assert_error((status, answer), 400, "bad_request")
    upload_id = boxd.call("POST", "/v1/uploads?dest=x")[1]["uploadId"]
    assert boxd.call("PUT", f"/v1/uploads/{upload_id}", b"x")[0] == 400  # no Upload-Offset
    assert boxd.call("DELETE", f"/v1/uploads/{upload_id}")[0] == 200
    assert boxd.request("HEAD", f"/v1/uploads/{upload_id}").status == 404


def cache_records(boxd):
    import struct
    path = os.path.join(boxd.run_dir, "hash-cache")
    if not os.path.exists(path):
        return 0
    with open(path, "rb") as f:
        magic, slots, records, _ = struct.unpack("<4Q", f.read(32))
    return records


def test_uploaded_files_refresh_the_hash_cache(boxd):
    from synclib import manifest_for
    members = [member(f"src/f{i}.js", data=b"x" * i) for i in range(5)]
    members.append(member("link", tarfile.SYMTYPE, linkname="src/f1.js"))
    assert upload(boxd, "app", tar_gz(members))[0] == 200
    assert cache_records(boxd) == 5  # the regular files, hashed after the upload
    app = os.path.join(boxd.work_dir, "app")
    manifest = manifest_for(app)
    status, answer = boxd.call("POST", "/v1/sync/diff?dest=app", manifest)
    assert (status, answer) == (200, {"changed": []})
    with open(os.path.join(app, "src", "f3.js"), "r+b") as f:  # same size, new bytes
        f.write(b"y")
    status, answer = boxd.call("POST", "/v1/sync/diff?dest=app", manifest)
    assert answer == {"changed": [b"src/f3.js".hex()]}
