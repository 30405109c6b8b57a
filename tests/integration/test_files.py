"""GET /v1/files and the boxctl round trips (sync push, get)."""
import hashlib
import io
import os
import socket
import stat
import subprocess
import tarfile

from conftest import MEMORY_SCALE, assert_error
from synclib import manifest_for, walk_entries


def test_file_as_is_with_ranges(boxd):
    data = os.urandom(700_000)
    os.makedirs(os.path.join(boxd.work_dir, "app"))
    with open(os.path.join(boxd.work_dir, "app", "blob.bin"), "wb") as f:
        f.write(data)
    absolute = os.path.join(boxd.work_dir, "app", "blob.bin")
    for path in [absolute, "app/blob.bin"]:
        response = boxd.request("GET", f"/v1/files?path={path}")
        assert response.status == 200
        assert response.headers["x-archive"] == "0"
        assert response.headers["content-type"] == "application/octet-stream"
        assert response.body == data
    response = boxd.request("GET", "/v1/files?path=app/blob.bin", headers={"Range": "bytes=10-19"})
    assert response.status == 206 and response.body == data[10:20]
    assert response.headers["content-range"] == f"bytes 10-19/{len(data)}"
    response = boxd.request("GET", "/v1/files?path=app/blob.bin", headers={"Range": "bytes=-5"})
    assert response.status == 206 and response.body == data[-5:]
    response = boxd.request("GET", "/v1/files?path=app/blob.bin", headers={"Range": "bytes=699990-"})
    assert response.status == 206 and response.body == data[699990:]
    response = boxd.request("GET", "/v1/files?path=app/blob.bin", headers={"Range": "bytes=800000-"})
    assert response.status == 416
    assert [s for s in boxd.call("GET", "/v1/steps")[1]["steps"] if s["kind"] == "get"]


def test_folder_as_tar_gz_with_top_entry(boxd):
    app = os.path.join(boxd.work_dir, "app", "dist")
    os.makedirs(os.path.join(app, "js"))
    with open(os.path.join(app, "index.html"), "wb") as f:
        f.write(b"<html>")
    with open(os.path.join(app, "js", "run.sh"), "wb") as f:
        f.write(b"#!/bin/sh\n")
    os.chmod(os.path.join(app, "js", "run.sh"), 0o755)
    os.symlink("index.html", os.path.join(app, "home.html"))
    os.symlink("/etc/passwd", os.path.join(app, "out"))  # stored as a link, never followed
    response = boxd.request("GET", f"/v1/files?path={boxd.work_dir}/app/dist")
    assert response.status == 200
    assert response.headers["x-archive"] == "1"
    assert response.headers["content-type"] == "application/gzip"
    with tarfile.open(fileobj=io.BytesIO(response.body), mode="r:gz") as tar:
        names = {m.name: m for m in tar.getmembers()}
        assert set(names) == {"dist", "dist/index.html", "dist/js", "dist/js/run.sh",
                              "dist/home.html", "dist/out"}
        assert names["dist/js/run.sh"].mode & 0o777 == 0o755
        assert names["dist/out"].issym() and names["dist/out"].linkname == "/etc/passwd"
        assert tar.extractfile("dist/index.html").read() == b"<html>"


def test_paths_outside_the_work_dir(boxd, tmp_path):
    (tmp_path / "secret").write_bytes(b"s")
    os.symlink(str(tmp_path), os.path.join(boxd.work_dir, "escape"))
    for path in ["/etc/passwd", "../secret", "escape/secret", "escape", "/", str(tmp_path), boxd.work_dir, "."]:
        status, answer = boxd.call("GET", f"/v1/files?path={path}")
        assert_error((status, answer), 400, "bad_request", path)
        assert answer["error"]["code"] == "bad_request"
    assert_error(boxd.call("GET", "/v1/files?path=missing"), 404, "not_found")
    assert_error(boxd.call("GET", "/v1/files"), 400, "bad_request")


def test_large_file_streams_to_a_slow_reader(boxd):
    path = os.path.join(boxd.work_dir, "big.bin")
    with open(path, "wb") as f:
        f.truncate(200 << 20)
        f.seek(100 << 20)
        f.write(b"marker")
    raw = socket.socket(socket.AF_UNIX)
    raw.settimeout(30)
    raw.connect(boxd.socket)
    raw.sendall(b"GET /v1/files?path=big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
    raw.recv(65536)
    # boxd must not read the whole file ahead of a client that does not read.
    import time
    time.sleep(0.5)
    rss = int([l for l in open(f"/proc/{boxd.proc.pid}/status") if l.startswith("VmRSS")][0].split()[1])
    assert rss < 40_000 * MEMORY_SCALE, rss  # kB: well under the 200 MB the file holds
    raw.close()
    assert boxd.call("GET", "/v1/health")[0] == 200


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                            GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t"))


def test_push_get_round_trip_in_git_tree(boxd, tmp_path):
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "main.c").write_bytes(b"int main(void) { return 0; }\n")
    (repo / "run.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(repo / "run.sh", 0o755)
    (repo / ".gitignore").write_bytes(b"*.log\nbuild/\n")
    (repo / "debug.log").write_bytes(b"ignored")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_bytes(b"ignored")
    os.symlink("src/main.c", repo / "main-link")
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "init", cwd=repo)
    (repo / "untracked.txt").write_bytes(b"new, not ignored")
    result = boxd.boxctl("sync", "push", str(repo), "proj")
    assert result.returncode == 0, result.stderr
    assert b"differ" in result.stderr
    proj = os.path.join(boxd.work_dir, "proj")
    assert sorted(walk_entries(proj)) == sorted(
        [b".gitignore", b"main-link", b"run.sh", b"src/main.c", b"untracked.txt"])
    assert stat.S_IMODE(os.stat(os.path.join(proj, "run.sh")).st_mode) == 0o755
    # A second push finds nothing to send.
    result = boxd.boxctl("sync", "push", str(repo), "proj")
    assert result.returncode == 0 and b" 0 differ" in result.stderr, result.stderr
    (repo / "src" / "main.c").write_bytes(b"int main(void) { return 1; }\n")
    result = boxd.boxctl("sync", "push", str(repo), "proj")
    assert b" 1 differ" in result.stderr, result.stderr
    # And back: get the folder, compare with the repo.
    out = tmp_path / "proj.tgz"
    result = boxd.boxctl("get", os.path.join(boxd.work_dir, "proj"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    back = tmp_path / "back"
    back.mkdir()
    subprocess.run(["tar", "-xzf", str(out), "-C", str(back)], check=True)
    paths = [b".gitignore", b"main-link", b"run.sh", b"src/main.c", b"untracked.txt"]
    assert manifest_for(back / "proj", paths) == manifest_for(repo, paths)
    result = boxd.boxctl("get", "proj/run.sh")
    assert result.returncode == 0 and result.stdout == b"#!/bin/sh\n"
    result = boxd.boxctl("get", "../nope")
    assert result.returncode == 1 and b"boxctl:" in result.stderr


def test_push_plain_tree_skips_generated_folders(boxd, tmp_path):
    tree = tmp_path / "tree"
    for rel in ["a.txt", "node_modules/x/index.js", "dist/bundle.js", ".venv/bin/python",
                "lib/\udcffraw.txt"]:
        path = os.path.join(os.fsencode(tree), os.fsencode(rel))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(rel.encode(errors="surrogateescape"))
    result = boxd.boxctl("sync", "push", str(tree), "plain")
    assert result.returncode == 0, result.stderr
    assert sorted(walk_entries(os.path.join(boxd.work_dir, "plain"))) == [b"a.txt", b"lib/\xffraw.txt"]
    manifest = manifest_for(tree, [b"a.txt", b"lib/\xffraw.txt", b"gone"])
    manifest += b"%s %s\n" % (b"0" * 40, b"gone".hex().encode())
    result = boxd.boxctl("sync", "diff", "plain", input=manifest)
    assert result.returncode == 0 and result.stdout == b"gone\n", result
    result = boxd.boxctl("sync", "diff", "missing", input=manifest)
    assert result.stdout == b"all\n"


def test_push_large_tree_goes_resumable(boxd, tmp_path):
    tree = tmp_path / "large"
    tree.mkdir()
    for i in range(5):
        (tree / f"r{i}.bin").write_bytes(os.urandom(14 << 20))  # incompressible: 70 MB
    result = boxd.boxctl("sync", "push", str(tree), "large", timeout=300)
    assert result.returncode == 0, result.stderr
    for i in range(5):
        a = hashlib.sha1((tree / f"r{i}.bin").read_bytes()).hexdigest()
        b = hashlib.sha1(open(os.path.join(boxd.work_dir, "large", f"r{i}.bin"), "rb").read()).hexdigest()
        assert a == b
