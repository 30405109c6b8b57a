"""GET /v1/files/changes: the journal against a brute-force walk, the away
client, bounds, overflow, follow, hostile input (docs/changes.md)."""
import json
import os
import random
import shutil
import signal
import socket
import stat
import subprocess
import threading
import time
import urllib.parse

import pytest

from conftest import assert_error, wait_for
from changeslib import (changes, check, follow_lines, ready_cursor, snapshot)


# ---- random rounds against the walk ----

class Tree:
    """Random operations on a tree, as an editor, a build and a shell do them."""

    def __init__(self, root, seed):
        self.root = root
        self.random = random.Random(seed)
        self.counter = 0

    def name(self):
        self.counter += 1
        return f"n{self.counter}"

    def entries(self, want_dir=None, links=True):
        """Folders (want_dir), or files and links (links: False for files only)."""
        found = []
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if d != ".git"]
            rel = os.path.relpath(folder, self.root)
            rel = "" if rel == "." else rel
            for name in dirs + files:
                st = os.lstat(os.path.join(folder, name))
                is_dir = stat.S_ISDIR(st.st_mode)
                if is_dir == want_dir and (links or not stat.S_ISLNK(st.st_mode)):
                    found.append(os.path.join(rel, name))
        return found

    def folder(self):
        return self.random.choice([""] + self.entries(True))

    def path(self, rel):
        return os.path.join(self.root, rel)

    def step(self):
        r = self.random
        op = r.choice(["create", "create", "write", "write", "mkdir", "rename", "rename_dir",
                       "delete", "rmtree", "link", "chmod", "replace", "mkdir_fill"])
        files, dirs = self.entries(False), self.entries(True)
        plain = self.entries(False, links=False)
        if op == "create" or (op in ("write", "delete", "rename", "chmod", "replace") and not plain):
            with open(self.path(os.path.join(self.folder(), self.name())), "w") as f:
                f.write("x" * r.randint(0, 100))
        elif op == "write":
            with open(self.path(r.choice(plain)), "a") as f:
                f.write("more")
        elif op == "mkdir":
            os.mkdir(self.path(os.path.join(self.folder(), self.name())))
        elif op == "mkdir_fill":
            top = os.path.join(self.folder(), self.name())
            os.makedirs(self.path(os.path.join(top, "a", "b")))
            for i in range(3):
                with open(self.path(os.path.join(top, "a", f"f{i}")), "w") as f:
                    f.write("y")
        elif op == "rename":
            target = os.path.join(self.folder(), r.choice([self.name(), *files[:1]]))
            try:
                os.rename(self.path(r.choice(files)), self.path(target))
            except OSError:
                pass
        elif op == "rename_dir" and dirs:
            source = r.choice(dirs)
            target = os.path.join(self.folder(), self.name())
            if target.startswith(source + "/"):
                return
            os.rename(self.path(source), self.path(target))
        elif op == "delete":
            os.unlink(self.path(r.choice(files)))
        elif op == "rmtree" and dirs:
            shutil.rmtree(self.path(r.choice(dirs)))
        elif op == "link":
            os.symlink(r.choice(["x", "../y", "/nonexistent"]), self.path(os.path.join(self.folder(), self.name())))
        elif op == "chmod":
            # To another mode: a chmod that changes nothing is still an
            # event (docs/changes.md), which no walk can see.
            victim = self.path(r.choice(plain))
            mode = stat.S_IMODE(os.lstat(victim).st_mode)
            os.chmod(victim, r.choice([m for m in (0o644, 0o755, 0o600) if m != mode]))
        elif op == "replace":
            victim = r.choice(files)
            os.unlink(self.path(victim))
            with open(self.path(victim), "w") as f:
                f.write("again")


def test_random_rounds_equal_the_walk(boxd):
    work = boxd.work_dir
    tree = Tree(work, seed=1234)
    for _ in range(30):
        tree.step()
    first = ready_cursor(boxd)
    first_snapshot = snapshot(work)
    for round_number in range(40):
        before = snapshot(work)
        cursor = changes(boxd, first)["cursor"]
        for _ in range(random.Random(round_number).randint(1, 25)):
            tree.step()
        after = snapshot(work)
        check(before, after, changes(boxd, cursor), work, f"round {round_number}")
        # The client that was away since the start gets the whole difference.
        check(first_snapshot, after, changes(boxd, first), work, f"away, round {round_number}")


def test_scope_under_a_folder(boxd):
    work = boxd.work_dir
    os.makedirs(os.path.join(work, "repo", "src"))
    os.makedirs(os.path.join(work, "other", "big", "deep"))
    with open(os.path.join(work, "other", "big", "deep", "f"), "w") as f:
        f.write("z")
    cursor = ready_cursor(boxd)
    before = {k[5:]: v for k, v in snapshot(os.path.join(work)).items() if k.startswith("repo/")}
    os.rename(os.path.join(work, "other", "big"), os.path.join(work, "repo", "src", "big"))
    os.rename(os.path.join(work, "repo", "src"), os.path.join(work, "moved-out"))
    os.mkdir(os.path.join(work, "repo", "kept"))
    os.rename(os.path.join(work, "moved-out"), os.path.join(work, "repo", "back"))
    after = snapshot(os.path.join(work, "repo"))
    answer = changes(boxd, cursor, path=os.path.join(work, "repo"))
    check(before, after, answer, os.path.join(work, "repo"), "scoped")
    relative = changes(boxd, cursor, path="repo")
    assert relative["changes"] == answer["changes"]


# ---- real tools ----

def run(*args, cwd):
    subprocess.run(args, cwd=cwd, check=True, capture_output=True, timeout=120,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                            GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t",
                            npm_config_cache=os.path.join(cwd, "..", ".npm-cache")))


def test_git_checkout_equals_the_walk(boxd):
    work = boxd.work_dir
    repo = os.path.join(work, "repo")
    os.makedirs(os.path.join(repo, "src", "old"))
    for i in range(20):
        with open(os.path.join(repo, "src", "old", f"f{i}.txt"), "w") as f:
            f.write(f"main {i}\n")
    run("git", "init", "-q", "-b", "main", cwd=repo)
    run("git", "add", ".", cwd=repo)
    run("git", "commit", "-qm", "one", cwd=repo)
    run("git", "checkout", "-qb", "other", cwd=repo)
    shutil.rmtree(os.path.join(repo, "src", "old"))
    os.makedirs(os.path.join(repo, "src", "new", "deeper"))
    for i in range(20):
        with open(os.path.join(repo, "src", "new", "deeper", f"g{i}.txt"), "w") as f:
            f.write(f"other {i}\n")
    run("git", "add", "-A", ".", cwd=repo)
    run("git", "commit", "-qm", "two", cwd=repo)
    cursor = ready_cursor(boxd)
    before = snapshot(work)
    run("git", "checkout", "-q", "main", cwd=repo)
    after = snapshot(work)
    paths = check(before, after, changes(boxd, cursor), work, "checkout")
    assert not any("/.git/" in p for p in paths)
    internal = changes(boxd, cursor, internals=True)
    assert any("/.git/" in c["path"] for c in internal["changes"])


def test_npm_install_of_a_local_tarball_equals_the_walk(boxd, tmp_path):
    work = boxd.work_dir
    package = tmp_path / "pkg"
    (package / "lib" / "inner").mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "pkg", "version": "1.0.0"}))
    for i in range(30):
        (package / "lib" / "inner" / f"m{i}.js").write_text(f"module.exports = {i};\n")
    run("npm", "pack", "--silent", cwd=str(package))
    tarball = str(package / "pkg-1.0.0.tgz")
    app = os.path.join(work, "app")
    os.makedirs(app)
    with open(os.path.join(app, "package.json"), "w") as f:
        json.dump({"name": "app", "version": "1.0.0"}, f)
    cursor = ready_cursor(boxd)
    before = snapshot(work)
    run("npm", "install", "--offline", "--no-audit", "--no-fund", tarball, cwd=app)
    after = snapshot(work)
    assert "app/node_modules/pkg/lib/inner/m7.js" in after
    check(before, after, changes(boxd, cursor), work, "npm install")


def test_folders_moved_in_and_out_of_the_work_dir(boxd, tmp_path):
    work = boxd.work_dir
    outside = tmp_path / "outside" / "tree"
    (outside / "a" / "b").mkdir(parents=True)
    for i in range(50):
        (outside / "a" / "b" / f"f{i}").write_text("x")
    os.makedirs(os.path.join(work, "leaving", "x", "y"))
    with open(os.path.join(work, "leaving", "x", "y", "z"), "w") as f:
        f.write("z")
    cursor = ready_cursor(boxd)
    before = snapshot(work)
    os.rename(outside, os.path.join(work, "arrived"))
    os.rename(os.path.join(work, "leaving"), tmp_path / "gone")
    after = snapshot(work)
    answer = changes(boxd, cursor)
    check(before, after, answer, work, "in and out")
    # The folder moved out is not watched any more: writes there are not news.
    cursor = answer["cursor"]
    (tmp_path / "gone" / "x" / "new").write_text("not ours")
    os.makedirs(os.path.join(work, "leaving"))
    after2 = snapshot(work)
    check(after, after2, changes(boxd, cursor), work, "after out")


# ---- the journal's bounds and losses ----

def test_a_log_written_ten_thousand_times_is_one_entry(boxd_factory):
    boxd = boxd_factory("--changes-keep", "10", "--changes-keep-sec", "0")
    cursor = ready_cursor(boxd)
    with open(os.path.join(boxd.work_dir, "build.log"), "w") as f:
        for i in range(10_000):
            f.write(f"line {i}\n")
            f.flush()
    answer = changes(boxd, cursor)
    assert [c["kind"] for c in answer["changes"]] == ["created"]


def test_past_the_bound_all_true(boxd_factory):
    boxd = boxd_factory("--changes-keep", "10", "--changes-keep-sec", "0")
    cursor = ready_cursor(boxd)
    for i in range(30):
        open(os.path.join(boxd.work_dir, f"f{i}"), "w").close()
    answer = changes(boxd, cursor)
    assert answer["all"] is True and answer["cursor"] != cursor
    # Its new cursor answers.
    open(os.path.join(boxd.work_dir, "late"), "w").close()
    assert [c["path"] for c in changes(boxd, answer["cursor"])["changes"]] == \
        [os.path.join(boxd.work_dir, "late")]


def test_a_restarted_boxd_answers_all(boxd):
    cursor = ready_cursor(boxd)
    boxd.stop()
    boxd.start()
    assert changes(boxd, cursor)["all"] is True


def test_queue_overflow_answers_all_then_recovers(boxd_factory):
    limit_file = "/proc/sys/fs/inotify/max_queued_events"
    if os.geteuid() != 0:
        pytest.skip("lowering the inotify queue needs root")
    with open(limit_file) as f:
        saved = f.read().strip()
    try:
        with open(limit_file, "w") as f:
            f.write("64")
        boxd = boxd_factory()  # its queue's limit is taken at its start
    finally:
        with open(limit_file, "w") as f:
            f.write(saved)
    cursor = ready_cursor(boxd)
    os.kill(boxd.proc.pid, signal.SIGSTOP)
    try:
        for i in range(500):
            open(os.path.join(boxd.work_dir, f"f{i}"), "w").close()
    finally:
        os.kill(boxd.proc.pid, signal.SIGCONT)
    assert changes(boxd, cursor)["all"] is True
    cursor = ready_cursor(boxd)  # the tree walked again
    before = snapshot(boxd.work_dir)
    os.unlink(os.path.join(boxd.work_dir, "f3"))
    check(before, snapshot(boxd.work_dir), changes(boxd, cursor), boxd.work_dir, "recovered")


def watches_held(pid):
    """How many inotify watches the process holds, from its fds' fdinfo."""
    held = 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                held += sum(line.startswith("inotify wd:") for line in f)
        except FileNotFoundError:
            pass
    return held


def test_a_full_watch_table_gives_every_watch_back(boxd_factory):
    """The watch table is the box's tools' too (a dev server, a test runner
    watching): boxd out of room gives back what it holds and answers all,
    rather than keep the table full. The limit is lowered in a user
    namespace of boxd's own (/proc/sys/user is per namespace), so nothing
    else on the machine feels it."""
    if subprocess.run(["unshare", "--user", "--map-root-user", "true"]).returncode != 0:
        pytest.skip("no user namespaces here")
    boxd = boxd_factory(start=False)
    os.makedirs(boxd.work_dir, exist_ok=True)
    for i in range(40):
        os.makedirs(os.path.join(boxd.work_dir, f"d{i}"))
    boxd.wrapper = ["unshare", "--user", "--map-root-user", "sh", "-c",
                    'echo 20 >/proc/sys/user/max_inotify_watches && exec "$@"', "sh"]
    boxd.start()
    status, body = boxd.call("GET", "/v1/files/changes")
    assert status == 200, body
    cursor = body["cursor"]
    # What stays is boxd's few watches of single files elsewhere (its
    # settings), not the tree's.
    wait_for(lambda: watches_held(boxd.proc.pid) <= 5, timeout=10,
             what="boxd to give the tree's watches back")
    assert changes(boxd, cursor)["all"] is True
    assert "watch table is full" in boxd.log()


# ---- follow ----

def test_follow_streams_changes_within_a_moment(boxd):
    cursor = ready_cursor(boxd)
    target = os.path.join(boxd.work_dir, "live.txt")
    seen = {}

    def writer():
        time.sleep(0.3)
        seen["written"] = time.monotonic()
        with open(target, "w") as f:
            f.write("hi")

    thread = threading.Thread(target=writer)
    thread.start()

    def got_it(lines):
        if any(line.get("path") == target for line in lines) and "at" not in seen:
            seen["at"] = time.monotonic()
        return "at" in seen and lines[-1].get("cursor")

    lines = follow_lines(boxd, "follow=1&since=" + cursor, got_it)
    thread.join()
    assert any(line.get("path") == target and line["kind"] == "created" for line in lines)
    assert seen["at"] - seen["written"] < 1.0
    # The cursor line ends what was sent: after it, at most the file's write
    # (its creation and its write may come in two batches).
    later = lines[-1]["cursor"]
    assert all(c["path"] == target for c in changes(boxd, later)["changes"])


def test_follow_without_since_starts_with_a_cursor(boxd):
    ready_cursor(boxd)
    lines = follow_lines(boxd, "follow=1", lambda lines: lines)
    assert list(lines[0]) == ["cursor"]


# ---- hostile input ----

def test_hostile_input(boxd, tmp_path):
    cursor = ready_cursor(boxd)
    base = "/v1/files/changes?"
    for bad in ["nope", "", "0123456789abcdef", "0123456789abcdef-", "0123456789abcdeZ-1",
                "0123456789abcdef-1x", "0123456789abcdef-99999999999999999999999", "a" * 5000]:
        assert_error(boxd.call("GET", base + urllib.parse.urlencode({"since": bad})), 400,
                     "bad_request", bad[:40])
    # Another box's (or a restarted boxd's) cursor: read everything again.
    other = "fedcba9876543210-5" if not cursor.startswith("fedcba") else "0123456789abcdef-5"
    assert changes(boxd, other)["all"] is True
    far = cursor.split("-")[0] + "-99999999"
    assert changes(boxd, far)["all"] is True
    for path in ["/etc", "../x", str(tmp_path), "a/../../b"]:
        assert_error(boxd.call("GET", base + urllib.parse.urlencode({"path": path, "since": cursor})),
                     400, "bad_request", path)
    assert_error(boxd.call("GET", base + "path=%FF%FE&since=" + cursor), 400, "bad_request")
    assert_error(boxd.call("GET", base + "path=" + "a" * 300 + "&since=" + cursor), 400,
                 "bad_request")
    assert_error(boxd.call("GET", base + "path=" + "a/" * 3000 + "&since=" + cursor), 400,
                 "bad_request")
    assert_error(boxd.call("GET", base + "follow=maybe"), 400, "bad_request")


def test_names_that_are_not_utf8(boxd):
    cursor = ready_cursor(boxd)
    name = os.path.join(boxd.work_dir.encode(), b"caf\xe9")
    open(name, "w").close()
    answer = changes(boxd, cursor)
    [entry] = answer["changes"]
    assert bytes.fromhex(entry["pathHex"]) == name
    assert entry["path"].endswith("caf\ufffd")
    # A name at the kernel's limit goes through whole.
    long = "l" * 255
    cursor = answer["cursor"]
    open(os.path.join(boxd.work_dir, long), "w").close()
    assert changes(boxd, cursor)["changes"][0]["path"].endswith(long)


def test_boxctl_changes(boxd):
    cursor = ready_cursor(boxd)
    os.mkdir(os.path.join(boxd.work_dir, "made"))
    result = boxd.boxctl("changes", "--since", cursor)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert lines[0].split() == ["created", "dir", os.path.join(boxd.work_dir, "made")]
    assert lines[-1].startswith("cursor ")
    scoped = boxd.boxctl("--json", "changes", "made", "--since", lines[-1].split()[1])
    assert json.loads(scoped.stdout)["changes"] == []
    bad = boxd.boxctl("changes", "--since", "nope")
    assert bad.returncode == 1 and b"cursor" in bad.stderr
    assert boxd.boxctl("changes", "--bogus").returncode == 2
