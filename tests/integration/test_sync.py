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


def test_dest_outside_work_dir(boxd, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"s")
    os.symlink(str(outside), os.path.join(boxd.work_dir, "escape"))
    manifest = b"%s %s\n" % (entry_hash(str(outside / "secret")).encode(), b"secret".hex().encode())
    for dest in ["escape", "../outside", str(outside)]:
        status, answer = post_diff(boxd, dest, manifest)
        assert_error((status, answer), 400, "bad_request", dest)
    # A symlink inside dest that leads out is never followed: it differs.
    os.makedirs(os.path.join(boxd.work_dir, "app"))
    os.symlink(str(outside), os.path.join(boxd.work_dir, "app", "out"))
    manifest = b"%s %s\n" % (entry_hash(str(outside / "secret")).encode(), b"out/secret".hex().encode())
    assert post_diff(boxd, "app", manifest) == (200, {"changed": [b"out/secret".hex()]})


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
