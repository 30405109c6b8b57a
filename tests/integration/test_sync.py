"""POST /v1/sync/diff against the reference rule (synclib.py) on generated trees."""
import os
import time

import pytest

from conftest import assert_error
from synclib import entry_hash, expected_changed, manifest_for, walk_entries


def post_diff(boxd, dest, manifest, limit=None):
    query = f"/v1/sync/diff?dest={dest}" + (f"&limit={limit}" if limit is not None else "")
    return boxd.call("POST", query, manifest, headers={"Content-Type": "text/plain"})


def write(path, data, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def make_tree(root):
    root = os.fsencode(root)
    write(os.path.join(root, b"README.md"), b"# hello\n")
    write(os.path.join(root, b"bin/run.sh"), b"#!/bin/sh\necho run\n", 0o755)
    write(os.path.join(root, b"bin/owner-only"), b"x", 0o744)
    write(os.path.join(root, b"src/app.js"), b"console.log(1)\n" * 100)
    write(os.path.join(root, b"src/caf\xe9.txt"), b"latin-1 name\n")      # not UTF-8
    write(os.path.join(root, b"src/\xff\xfe raw"), b"raw bytes\n")
    write(os.path.join(root, b"deep/a/b/c/d.txt"), b"deep\n")
    write(os.path.join(root, b"empty"), b"")
    write(os.path.join(root, b"will-be-dir"), b"file on the client\n")
    write(os.path.join(root, b"will-be-deleted"), b"bye\n")
    os.symlink(b"README.md", os.path.join(root, b"link-to-file"))
    os.symlink(b"src", os.path.join(root, b"link-to-dir"))
    os.symlink(b"does/not/exist", os.path.join(root, b"link-to-nowhere"))


def copy_tree(source, target):
    import shutil
    shutil.copytree(os.fsencode(source), os.fsencode(target), symlinks=True)


def test_diff_matches_reference(boxd, tmp_path):
    client = tmp_path / "client"
    make_tree(client)
    dest = os.path.join(boxd.work_dir, "app")
    copy_tree(client, dest)
    manifest = manifest_for(client)
    assert len(manifest.splitlines()) == 13

    status, answer = post_diff(boxd, "app", manifest)
    assert status == 200, answer
    assert answer == {"changed": []}

    # Change the box side in every way the rule cares about.
    d = os.fsencode(dest)
    os.chmod(os.path.join(d, b"bin/run.sh"), 0o644)                    # exec bit lost
    os.chmod(os.path.join(d, b"bin/owner-only"), 0o700)                 # 100 -> 100: same
    write(os.path.join(d, b"src/app.js"), b"console.log(2)\n" * 100)    # same size
    os.remove(os.path.join(d, b"will-be-deleted"))
    os.remove(os.path.join(d, b"will-be-dir"))
    os.mkdir(os.path.join(d, b"will-be-dir"))                           # a dir where a file was
    os.remove(os.path.join(d, b"link-to-nowhere"))
    os.symlink(b"does/not/exist/either", os.path.join(d, b"link-to-nowhere"))
    os.remove(os.path.join(d, b"link-to-file"))
    write(os.path.join(d, b"link-to-file"), b"# hello\n")               # link became a file
    write(os.path.join(d, b"src/caf\xe9.txt"), b"changed\n")

    expected = expected_changed(manifest, dest)
    assert len(expected) == 7
    for attempt in range(3):  # cold, then from the cache
        status, answer = post_diff(boxd, "app", manifest)
        assert status == 200
        assert sorted(answer["changed"]) == sorted(expected), attempt
        time.sleep(0.02)


def test_cache_sees_changes_that_keep_size_and_mtime(boxd, tmp_path):
    dest = os.path.join(boxd.work_dir, "app")
    write(os.path.join(dest, "a.txt"), b"aaaa")
    manifest = manifest_for(dest)
    for _ in range(2):
        assert post_diff(boxd, "app", manifest) == (200, {"changed": []})
        time.sleep(0.05)  # past the racy window: the cache now answers
    st = os.stat(os.path.join(dest, "a.txt"))
    write(os.path.join(dest, "a.txt"), b"bbbb")
    os.utime(os.path.join(dest, "a.txt"), ns=(st.st_atime_ns, st.st_mtime_ns))
    assert post_diff(boxd, "app", manifest) == (200, {"changed": ["a.txt".encode().hex()]})
    # Rewritten in the same instant as a diff hashed it: hashed again next time.
    write(os.path.join(dest, "a.txt"), b"aaaa")
    assert post_diff(boxd, "app", manifest) == (200, {"changed": []})
    write(os.path.join(dest, "a.txt"), b"cccc")
    os.utime(os.path.join(dest, "a.txt"), ns=(st.st_atime_ns, os.stat(os.path.join(dest, "a.txt")).st_mtime_ns))
    assert post_diff(boxd, "app", manifest)[1] == {"changed": ["a.txt".encode().hex()]}


def test_generated_tree_against_reference(boxd, tmp_path):
    import random
    rng = random.Random(7)
    dest = os.path.join(boxd.work_dir, "gen")
    client = str(tmp_path / "gen-client")
    for i in range(600):
        name = os.path.join(f"d{i % 17}", f"e{i % 5}", f"f{i}" + ("\udcff" if i % 50 == 0 else ""))
        data = os.urandom(rng.randrange(0, 3000))
        mode = rng.choice([0o644, 0o755, 0o600, 0o711])
        write(os.fsencode(os.path.join(client, name)), data, mode)
    copy_tree(client, dest)
    manifest = manifest_for(client)
    entries = walk_entries(dest)
    for rel in rng.sample(entries, 40):
        path = os.path.join(os.fsencode(dest), rel)
        choice = rng.randrange(4)
        if choice == 0:
            os.remove(path)
        elif choice == 1:
            os.chmod(path, os.stat(path).st_mode ^ 0o100)
        elif choice == 2:
            with open(path, "ab") as f:
                f.write(b"!")
        else:
            os.remove(path)
            os.symlink(b"elsewhere", path)
    expected = expected_changed(manifest, dest)
    assert 30 <= len(expected) <= 40
    status, answer = post_diff(boxd, "gen", manifest)
    assert status == 200
    assert sorted(answer["changed"]) == sorted(expected)
    assert post_diff(boxd, "gen", manifest, limit=len(expected) - 1) == (200, {"all": True})
    assert post_diff(boxd, "gen", manifest, limit=len(expected))[1]["changed"]


def test_all_when_dest_missing(boxd):
    manifest = b"%s %s\n" % (b"0" * 40, b"a".hex().encode())
    assert post_diff(boxd, "nowhere", manifest) == (200, {"all": True})
    assert post_diff(boxd, "nowhere/deeper", b"") == (200, {"all": True})


def test_empty_manifest(boxd):
    os.makedirs(os.path.join(boxd.work_dir, "app"))
    assert post_diff(boxd, "app", b"") == (200, {"changed": []})


@pytest.mark.parametrize("path", [b"../x", b"/etc/passwd", b"a/../../b", b"a//b", b"./a", b"a\0b"])
def test_paths_leaving_dest_are_bad_requests(boxd, path):
    os.makedirs(os.path.join(boxd.work_dir, "app"))
    manifest = b"%s %s\n" % (b"0" * 40, path.hex().encode())
    status, answer = post_diff(boxd, "app", manifest)
    assert status == 400 and answer["error"]["code"] == "bad_request"
    assert "line 1" in answer["error"]["message"]


@pytest.mark.parametrize("line", [b"nonsense", b"0" * 40, b"0" * 39 + b"g 61", b"0" * 40 + b" 6", b"0" * 40 + b" zz"])
def test_malformed_manifest_lines(boxd, line):
    os.makedirs(os.path.join(boxd.work_dir, "app"))
    status, answer = post_diff(boxd, "app", b"%s 61\n%s\n" % (b"0" * 40, line))
    assert status == 400 and "line 2" in answer["error"]["message"]


def test_dest_named_outside_the_work_dir_is_refused(boxd, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    manifest = b"%s %s\n" % (b"0" * 40, b"secret".hex().encode())
    for dest in ["../outside", str(outside), "a/../../outside"]:
        status, answer = post_diff(boxd, dest, manifest)
        assert_error((status, answer), 400, "bad_request", dest)


def test_dest_that_is_a_symlink_reads_through(boxd, tmp_path):
    """A dest that is itself a symlink (out of the work dir, or inside it)
    answers as the client's compare does: it reads through it."""
    outside = tmp_path / "outside"
    make_tree(outside)
    manifest = manifest_for(outside)
    os.symlink(str(outside), os.path.join(boxd.work_dir, "escape"))
    copy_tree(outside, os.path.join(boxd.work_dir, "real"))
    os.symlink("real", os.path.join(boxd.work_dir, "alias"))
    for dest in ["escape", "alias", os.path.join(boxd.work_dir, "alias")]:
        assert post_diff(boxd, dest, manifest) == (200, {"changed": []}), dest
    write(os.path.join(outside, "README.md"), b"changed\n")
    assert post_diff(boxd, "escape", manifest) == (200, {"changed": [b"README.md".hex()]})
    # Not there at all: a dangling link, a loop.
    os.symlink("nothing-here", os.path.join(boxd.work_dir, "dangling"))
    os.symlink("loop", os.path.join(boxd.work_dir, "loop"))
    assert post_diff(boxd, "dangling", manifest) == (200, {"all": True})
    assert post_diff(boxd, "loop", manifest) == (200, {"all": True})


def test_dest_that_is_a_file_makes_every_entry_differ(boxd):
    write(os.path.join(boxd.work_dir, "plain"), b"a file\n")
    manifest = b"".join(b"%s %s\n" % (b"0" * 40, p.hex().encode()) for p in [b"a", b"b/c"])
    assert post_diff(boxd, "plain", manifest) == (200, {"changed": [b"a".hex(), b"b/c".hex()]})
    assert post_diff(boxd, "plain", manifest, limit=1) == (200, {"all": True})


def test_directory_symlinks_in_the_box_are_read_through(boxd, tmp_path):
    """node_modules -> ../nm-out (pnpm, monorepos), a link to an absolute
    path out of the work dir, links to links: the answer is the reference
    rule's, which reads through every directory on the way."""
    client = tmp_path / "client"
    make_tree(client)
    write(os.path.join(client, "node_modules/pkg/index.js"), b"module.exports = 1\n")
    write(os.path.join(client, "node_modules/pkg/bin/cli"), b"#!/bin/sh\n", 0o755)
    write(os.path.join(client, "vendor/lib/a.c"), b"int a;\n")
    write(os.path.join(client, "chain/x/y.txt"), b"y\n")
    manifest = manifest_for(client)
    box = os.path.join(boxd.work_dir, "app")
    copy_tree(client, box)
    import shutil
    shutil.move(os.path.join(box, "node_modules"), os.path.join(boxd.work_dir, "nm-out"))
    os.symlink("../nm-out", os.path.join(box, "node_modules"))
    outside = tmp_path / "vendor-out"
    shutil.move(os.path.join(box, "vendor"), str(outside))
    os.symlink(str(outside), os.path.join(box, "vendor"))
    shutil.move(os.path.join(box, "chain"), os.path.join(boxd.work_dir, "chain-real"))
    os.symlink("chain-real", os.path.join(boxd.work_dir, "chain-hop"))
    os.symlink("../chain-hop", os.path.join(box, "chain"))
    assert expected_changed(manifest, box) == []
    assert post_diff(boxd, "app", manifest) == (200, {"changed": []})
    # A change behind each link is seen, as the reference sees it.
    write(os.path.join(boxd.work_dir, "nm-out/pkg/index.js"), b"module.exports = 2\n")
    os.chmod(os.path.join(outside, "lib/a.c"), 0o755)
    os.unlink(os.path.join(boxd.work_dir, "chain-real/x/y.txt"))
    expected = expected_changed(manifest, box)
    assert len(expected) == 3
    status, answer = post_diff(boxd, "app", manifest)
    assert status == 200 and sorted(answer["changed"]) == sorted(expected)


@pytest.fixture
def request_cleanup():
    import shutil
    made = []
    yield made.append
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


def test_diff_reads_as_the_box_user(boxd_factory, request_cleanup):
    """With --user, what a link leads to is read as that user reads it: a
    folder only root may read differs, as it would for the client's compare."""
    boxd = boxd_factory("--user", "nobody")
    import pathlib
    import tempfile
    base = pathlib.Path(tempfile.mkdtemp(prefix="boxd-user-"))  # a path nobody can walk
    os.chmod(base, 0o755)
    request_cleanup(base)
    private = base / "private"
    private.mkdir(mode=0o700)
    (private / "key").write_bytes(b"root only\n")
    public = base / "public"
    public.mkdir()
    (public / "note").write_bytes(b"anyone\n")
    os.makedirs(os.path.join(boxd.work_dir, "app"))
    os.symlink(str(private), os.path.join(boxd.work_dir, "app", "private"))
    os.symlink(str(public), os.path.join(boxd.work_dir, "app", "public"))
    manifest = (b"%s %s\n" % (entry_hash(str(private / "key")).encode(), b"private/key".hex().encode()) +
                b"%s %s\n" % (entry_hash(str(public / "note")).encode(), b"public/note".hex().encode()))
    assert post_diff(boxd, "app", manifest) == (200, {"changed": [b"private/key".hex()]})


def test_limit_must_be_a_number(boxd):
    assert_error(post_diff(boxd, "app", b"", limit="lots"), 400, "bad_request")


def test_cache_grows_past_its_first_size(boxd):
    # 2500 entries need more than the cache file's first 4096 slots.
    dest = os.path.join(boxd.work_dir, "many")
    for i in range(2500):
        write(os.path.join(dest, f"d{i % 10}", f"f{i}"), b"%d" % i)
    manifest = manifest_for(dest)
    for _ in range(2):
        assert post_diff(boxd, "many", manifest) == (200, {"changed": []})
        time.sleep(0.05)
    assert os.path.getsize(os.path.join(boxd.run_dir, "hash-cache")) > 4096 * 80
