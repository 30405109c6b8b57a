"""boxd's native diff and upload against the real sync client's own code.

The client is the parallelsandbox-mcp adapter, pinned at 0.2.4 and installed
from the npm registry into tests/client/node_modules by `npm ci` (never part
of this repository); tests/client/adapter-driver.mjs loads its index.mjs as
installed. For each pair of trees (a git working tree on the client's side,
a layout in the box) the adapter's manifest goes to both its own compare
(COMPARE_SCRIPT, built from its entryHash, run in the box through boxd's
exec, as the control plane runs it) and boxd's POST /v1/sync/diff; the two
answers must be equal. Then a sync through the native path (native diff,
the adapter's own upload) must leave its compare at "no change"."""
import json
import os
import random
import shutil
import subprocess
import time

import pytest

from conftest import REPO

CLIENT_DIR = os.path.join(REPO, "tests", "client")
TOTALS = {"pairs": 0, "entries": 0}
DRIVER = os.path.join(CLIENT_DIR, "adapter-driver.mjs")


def run_driver(*args, timeout=300):
    return subprocess.run(["node", DRIVER, *args], capture_output=True, timeout=timeout)


@pytest.fixture(scope="module")
def adapter():
    """Installs the pinned adapter when it is not there yet. No network, no
    npm: the test fails and says so; it never skips."""
    if not shutil.which("node"):
        pytest.fail("node is needed to run the real client (packaging/install-deps installs "
                    "Debian's nodejs and npm)")
    if run_driver("check").returncode != 0:
        if not shutil.which("npm"):
            pytest.fail("npm is needed to install the real client (packaging/install-deps "
                        "installs Debian's nodejs and npm)")
        install = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                                 cwd=CLIENT_DIR, capture_output=True, timeout=600)
        if install.returncode != 0:
            pytest.fail("cannot install parallelsandbox-mcp@0.2.4 from the npm registry into "
                        f"{CLIENT_DIR}/node_modules (npm ci exited {install.returncode}; is the "
                        f"registry reachable?):\n{install.stderr.decode(errors='replace')[-2000:]}")
    check = run_driver("check")
    if check.returncode != 0:
        pytest.fail(f"the installed adapter is unusable: {check.stderr.decode(errors='replace')}")
    yield json.loads(check.stdout)
    # Seen with -s: how much was compared.
    print(f"\nparallelsandbox-mcp@0.2.4: {TOTALS['pairs']} comparisons of "
          f"{TOTALS['entries']} manifest entries against the native diff")


def write(path, data, mode=0o644):
    path = os.fsencode(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def git_init(root):
    subprocess.run(["git", "init", "-q", root], check=True)


def client_tree(root, extra=None):
    """A client working tree: exec bits, non-UTF-8 names, links of all kinds."""
    root = os.fsencode(root)
    write(os.path.join(root, b"README.md"), b"# app\n")
    write(os.path.join(root, b"bin/run.sh"), b"#!/bin/sh\necho run\n", 0o755)
    write(os.path.join(root, b"bin/owner-x"), b"x", 0o744)
    write(os.path.join(root, b"src/app.js"), b"console.log(1)\n" * 50)
    write(os.path.join(root, b"src/caf\xe9.txt"), b"latin-1 name\n")
    write(os.path.join(root, b"src/\xff raw"), b"raw bytes\n")
    write(os.path.join(root, b"src/lib/util.js"), b"exports.u = 1\n")
    write(os.path.join(root, b"empty"), b"")
    os.symlink(b"README.md", os.path.join(root, b"link-file"))
    os.symlink(b"src/lib", os.path.join(root, b"link-dir"))
    os.symlink(b"nowhere", os.path.join(root, b"link-dangling"))
    for rel, data in (extra or {}).items():
        write(os.path.join(root, os.fsencode(rel)), data)
    git_init(root)
    return root


def copy(source, target):
    shutil.copytree(os.fsencode(source), os.fsencode(target), symlinks=True,
                    ignore=lambda _, names: [n for n in names if n in (".git", b".git")])


def move_out(box, rel, target, link):
    """Moves box/rel to target and leaves box/rel -> link in its place."""
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.move(os.path.join(box, rel), target)
    os.symlink(link, os.path.join(box, rel))


NODE_MODULES = {
    "node_modules/left-pad/index.js": b"module.exports = (s) => s\n",
    "node_modules/left-pad/package.json": b'{"name":"left-pad"}\n',
    "node_modules/.bin/tool": b"#!/bin/sh\n",
    "packages/web/node_modules/react/index.js": b"react\n",
    "packages/web/src/main.js": b"main\n",
}


def layout_identical(w, client, box, outside):
    copy(client, box)


def layout_edited(w, client, box, outside):
    copy(client, box)
    write(os.path.join(box, "src/app.js"), b"console.log(2)\n" * 50)   # same size
    os.chmod(os.path.join(box, "bin/run.sh"), 0o644)                   # exec bit lost
    os.chmod(os.path.join(box, "bin/owner-x"), 0o700)                  # 100 -> 100: same
    os.unlink(os.path.join(box, "empty"))
    os.unlink(os.path.join(box, "link-dir"))
    os.symlink("src", os.path.join(box, "link-dir"))                   # retargeted
    os.unlink(os.path.join(os.fsencode(box), b"src/caf\xe9.txt"))      # gone
    write(os.path.join(box, "src/\udcff raw"), b"raw bytes!\n")


def layout_pnpm(w, client, box, outside):
    """node_modules -> ../nm-out inside the work dir, one file differing."""
    copy(client, box)
    move_out(box, "node_modules", os.path.join(w, "nm-out"), "../nm-out")
    write(os.path.join(w, "nm-out/left-pad/index.js"), b"module.exports = (s) => ' ' + s\n")


def layout_monorepo(w, client, box, outside):
    """A package's node_modules -> a store by absolute path out of the work
    dir, a whole package -> a relative path out of dest, and a chain."""
    copy(client, box)
    move_out(box, "packages/web/node_modules", os.path.join(outside, "store/web-nm"),
             os.path.join(outside, "store/web-nm"))
    move_out(box, "node_modules", os.path.join(w, "shared/nm"), "../shared/nm-hop")
    os.symlink("nm", os.path.join(w, "shared/nm-hop"))
    move_out(box, "src/lib", os.path.join(w, "libs/lib"), "../../libs/lib")
    write(os.path.join(outside, "store/web-nm/react/index.js"), b"react 19\n")
    os.chmod(os.path.join(w, "shared/nm/.bin/tool"), 0o755)


def layout_dest_link_outside(w, client, box, outside):
    copy(client, os.path.join(outside, "real-app"))
    os.symlink(os.path.join(outside, "real-app"), box)
    write(os.path.join(outside, "real-app/README.md"), b"# changed in the box\n")


def layout_dest_link_inside(w, client, box, outside):
    copy(client, os.path.join(w, "checkouts/app"))
    os.symlink("checkouts/app", box)
    os.unlink(os.path.join(w, "checkouts/app/bin/run.sh"))


def layout_dest_missing(w, client, box, outside):
    pass


def layout_dangling_dir_link(w, client, box, outside):
    copy(client, box)
    shutil.rmtree(os.path.join(box, "node_modules"))
    os.symlink("../nm-gone", os.path.join(box, "node_modules"))


def layout_dest_dangling_link(w, client, box, outside):
    os.symlink("gone", box)


def layout_file_where_dir(w, client, box, outside):
    copy(client, box)
    shutil.rmtree(os.path.join(box, "src/lib"))
    write(os.path.join(box, "src/lib"), b"now a file\n")


def layout_leaf_links(w, client, box, outside):
    """The client's own links where the box has directories or other links."""
    copy(client, box)
    os.unlink(os.path.join(box, "link-dir"))
    os.symlink(os.path.join(w, "..", "elsewhere"), os.path.join(box, "link-dir"))
    os.unlink(os.path.join(box, "link-file"))
    write(os.path.join(box, "link-file"), b"# app\n")


# name: (layout, extra client files, sync expected to succeed)
LAYOUTS = {
    "identical": (layout_identical, {}, True),
    "edited": (layout_edited, {}, True),
    "pnpm-node-modules-link": (layout_pnpm, NODE_MODULES, True),
    "monorepo-links-out-of-dest-and-work-dir": (layout_monorepo, NODE_MODULES, True),
    "dest-is-link-out-of-work-dir": (layout_dest_link_outside, {}, True),
    "dest-is-link-inside-work-dir": (layout_dest_link_inside, {}, True),
    "dest-missing": (layout_dest_missing, {}, True),
    "leaf-links": (layout_leaf_links, {}, True),
    # Both GNU tar and boxd refuse to write below these; the answers agree.
    "dangling-directory-link": (layout_dangling_dir_link, NODE_MODULES, False),
    "dest-is-dangling-link": (layout_dest_dangling_link, {}, False),
    "file-where-client-has-directory": (layout_file_where_dir, {}, False),
}



def compare_pair(boxd, adapter, client, dest, sync):
    result = run_driver("pair", json.dumps({"socket": boxd.socket, "workDir": boxd.work_dir,
                                            "src": os.fsdecode(client), "dest": dest, "sync": sync}))
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    out = json.loads(result.stdout)
    TOTALS["pairs"] += 1
    TOTALS["entries"] += out["entries"]
    return out


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_native_diff_equals_the_adapters_compare(boxd, adapter, tmp_path, name):
    layout, extra, syncable = LAYOUTS[name]
    client = client_tree(tmp_path / "client", extra)
    outside = str(tmp_path / "outside")
    os.makedirs(outside)
    layout(boxd.work_dir, client, os.path.join(boxd.work_dir, "app"), outside)
    out = compare_pair(boxd, adapter, client, "app", sync=syncable)
    assert out["entries"] >= 11
    assert out["native"] == out["adapter"], out
    if name == "identical":
        assert out["adapter"] == {"changed": []}
    elif name in ("dest-missing", "dest-is-dangling-link"):
        assert out["adapter"] == {"all": True}
    else:
        assert out["adapter"].get("changed"), out   # the layout changed something
    if syncable:
        assert out["sync"]["ok"], out["sync"]
        assert out["adapterAfter"] == {"changed": []}, out
        assert out["nativeAfter"] == {"changed": []}, out


def test_generated_trees_with_linked_directories(boxd, adapter, tmp_path):
    """A few thousand entries, directories of the box moved out and linked
    back (in and out of the work dir), random edits; then over the limit."""
    rng = random.Random(16)
    client = tmp_path / "client"
    files = {}
    for i in range(3000):
        depth = rng.randint(0, 3)
        rel = "/".join(f"d{rng.randint(0, 7)}" for _ in range(depth)) + ("/" if depth else "") + f"f{i}"
        files[rel] = os.urandom(rng.randint(0, 300))
    client = client_tree(client, files)
    box = os.path.join(boxd.work_dir, "app")
    copy(client, box)
    outside = tmp_path / "outside"
    for n, top in enumerate(sorted(n for n in os.listdir(box) if n.startswith("d"))):
        if n % 2:
            move_out(box, top, str(outside / top), str(outside / top))
        else:
            move_out(box, top, os.path.join(boxd.work_dir, "moved", top), f"../moved/{top}")
    box_files = sorted(os.path.join(d, f) for d, _, fs in os.walk(box, followlinks=True) for f in fs)
    edited = rng.sample(box_files, 120)
    for path in edited[:100]:
        with open(path, "ab") as f:
            f.write(b"!")
    for path in edited[100:]:
        os.chmod(path, 0o755)
    out = compare_pair(boxd, adapter, client, "app", sync=True)
    assert out["entries"] > 3000
    assert out["native"] == out["adapter"]
    assert len(out["adapter"]["changed"]) >= 100
    assert out["sync"]["ok"] and out["adapterAfter"] == out["nativeAfter"] == {"changed": []}
    # Over the limit: both answer all, and a sync of everything settles it.
    for path in box_files[:500]:
        with open(path, "ab") as f:
            f.write(b"?")
    out = compare_pair(boxd, adapter, client, "app", sync=True)
    assert out["native"] == out["adapter"] == {"all": True}
    assert out["sync"]["ok"] and out["sync"]["sentFiles"] == out["entries"]
    assert out["adapterAfter"] == out["nativeAfter"] == {"changed": []}
    # The links are still the box's own.
    assert os.path.islink(os.path.join(box, "d0")) and os.path.islink(os.path.join(box, "d1"))


def test_a_sync_refused_at_its_first_entry_ends_with_the_message(boxd, adapter, tmp_path):
    """The adapter's own upload (tar piped into fetch, through a control plane
    that streams it on) of a ~40 MB archive whose first entry boxd refuses:
    the box has a file where the client has a folder. boxd has its answer at
    once; the sync must end promptly with that message. It used to hang for
    good: boxd answered and closed, fetch stopped writing, tar waited on its
    full pipe and the adapter on tar."""
    client = tmp_path / "client"
    write(os.path.join(client, "a/first.txt"), b"first\n")
    write(os.path.join(client, "big.bin"), os.urandom(40 << 20))
    git_init(str(client))
    write(os.path.join(boxd.work_dir, "app/a"), b"a file where the client has a folder\n")
    started = time.monotonic()
    try:
        result = run_driver("sync", json.dumps({"socket": boxd.socket, "src": str(client),
                                                "dest": "app"}), timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("the sync hung: no answer reached the client within 90 s")
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    out = json.loads(result.stdout)
    assert out["ok"] is False and out["error"].startswith("sync failed (HTTP 400): "), out
    assert 'archive entry "a/first.txt"' in out["error"] and "(bad_request)" in out["error"], out
    assert not os.path.exists(os.path.join(boxd.work_dir, "app/big.bin"))  # refused first
    assert took < 30, took
