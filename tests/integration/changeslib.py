"""The changes contract checked against a brute-force walk (docs/changes.md,
"Checking an answer"): a snapshot of the tree before and after, and the
answer applied to the first as a client applies it, in order."""
import json
import os
import stat
import time
import urllib.parse

from conftest import wait_for


def visible(rel, internals=False):
    """The default scope: not under a `.git` folder, not `.sbx`."""
    if internals:
        return True
    parts = rel.split("/")
    if parts[0] == ".sbx":
        return False
    return ".git" not in parts[:-1]


def snapshot(root, internals=False):
    """rel path -> what the walk compares: type, inode, mode; for files size
    and mtime, for links their target. A folder's mtime is left out (it
    moves with every entry made in it, which is its children's change)."""
    seen = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, root)
            if not visible(rel, internals):
                continue
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(st.st_mode):
                seen[rel] = ("dir", st.st_ino, st.st_mode)
            elif stat.S_ISLNK(st.st_mode):
                seen[rel] = ("link", st.st_ino, os.readlink(full))
            else:
                seen[rel] = ("file", st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns)
    return seen


def under(path, folder):
    return path.startswith(folder + "/")


def apply_answer(before, changes, work_dir):
    """The before tree's paths, each with where its content came from (its
    own path while unchanged; None once created or modified), after the
    answer as docs/changes.md says a client applies it: `removed` paths and
    `from` are paths as of the cursor, the others' `path` paths as of now.
    Take each move's source subtree from the cursor's tree; delete the
    removed paths and the sources; then put moved and created entries in
    place, shallowest first (each replaces what was there); then mark the
    modified ones."""
    state = {p: p for p in before}

    def rel(path):
        return os.path.relpath(path, work_dir)

    def subtree(tree, folder):
        return {k: v for k, v in tree.items() if k == folder or under(k, folder)}

    # A source's subtree is what it held at the cursor, less what the answer
    # removes or moves from inside it.
    taken = [rel(c["path"] if c["kind"] == "removed" else c["from"])
             for c in changes if c["kind"] in ("removed", "moved")]
    sources = {}
    for change in changes:
        if change["kind"] == "moved":
            source = rel(change["from"])
            inner = [t for t in taken if under(t, source)]
            sources[id(change)] = (source, {
                k: v for k, v in subtree(state, source).items()
                if not any(k == t or under(k, t) for t in inner)})
    for change in changes:
        if change["kind"] == "removed" or change["kind"] == "moved":
            gone = rel(change["path"] if change["kind"] == "removed" else change["from"])
            for key in subtree(state, gone):
                del state[key]
    placed = [c for c in changes if c["kind"] in ("moved", "created")]
    placed.sort(key=lambda c: rel(c["path"]).count("/"))
    for change in placed:
        path = rel(change["path"])
        for key in subtree(state, path):
            del state[key]
        if change["kind"] == "created":
            state[path] = None
            continue
        source, moving = sources[id(change)]
        for key, was in moving.items():
            state[path + key[len(source):]] = was
        if change.get("modified"):
            state[path] = None
    for change in changes:
        if change["kind"] == "modified":
            state[rel(change["path"])] = None
        elif change["kind"] not in ("created", "moved", "removed"):
            raise AssertionError(f"unknown kind {change}")
    return state


def check(before, after, answer, work_dir, context=""):
    """The answer, applied to `before`, gives `after`'s paths, and says a
    path changed exactly when the walk does."""
    assert not answer.get("all"), (context, answer)
    paths = [c["path"] for c in answer["changes"]]
    state = apply_answer(before, answer["changes"], work_dir)
    missing = sorted(set(after) - set(state))
    extra = sorted(set(state) - set(after))
    assert not missing and not extra, (context, "missing", missing[:20], "extra", extra[:20],
                                       answer["changes"][:40])
    for path, now in after.items():
        walk_changed = before.get(path) != now
        told = state[path] != path
        kinds = [c["kind"] for c in answer["changes"] if c["path"] == os.path.join(work_dir, path)]
        if told and not walk_changed and now[0] == "dir" and sorted(kinds) == ["created", "removed"]:
            # A folder removed and made again (git checkout does) may get its
            # old inode back: the walk cannot tell it from one left alone.
            continue
        assert walk_changed == told, (context, path, "walk", walk_changed, "answer", told,
                                      before.get(path), now,
                                      [c for c in answer["changes"] if path in c["path"]])
    counted = {}
    for change in answer["changes"]:
        counted[change["path"]] = counted.get(change["path"], 0) + 1
    repeated = {p: n for p, n in counted.items() if n > 1}
    # One entry per path, but for a path whose thing at the cursor was
    # removed and which holds a new one now.
    for path in repeated:
        kinds = [c["kind"] for c in answer["changes"] if c["path"] == path]
        assert len(kinds) == 2 and "removed" in kinds, (context, path, kinds)
    return paths


def changes(boxd, since, path=None, internals=False):
    query = {"since": since}
    if path:
        query["path"] = path
    if internals:
        query["all"] = "1"
    status, body = boxd.call("GET", "/v1/files/changes?" + urllib.parse.urlencode(query))
    assert status == 200, body
    return body


def ready_cursor(boxd, timeout=60):
    """A cursor that answers: one handed out once the first walk is over."""
    def attempt():
        status, body = boxd.call("GET", "/v1/files/changes")
        assert status == 200, body
        answer = changes(boxd, body["cursor"])
        return None if answer.get("all") else body["cursor"]
    return wait_for(attempt, timeout=timeout, interval=0.05, what="the watch to be complete")


def follow_lines(boxd, query, stop_after, timeout=10):
    """Reads a follow's NDJSON until stop_after(lines) holds."""
    from conftest import UnixConnection
    connection = UnixConnection(boxd.socket, timeout=timeout)
    connection.request("GET", "/v1/files/changes?" + query)
    response = connection.getresponse()
    assert response.status == 200
    lines = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not stop_after(lines):
        line = response.readline()
        if not line:
            break
        lines.append(json.loads(line))
    connection.close()
    return lines
