"""The sync entry hash rule of API.md, written independently of boxd's C, and
helpers shared by the sync tests and bench/bench_sync.py."""
import hashlib
import io
import os
import stat
import tarfile


def entry_hash(path):
    """sha1 per API.md for the entry at `path` (bytes), or None if it differs
    whatever the manifest says (missing, a directory, a device, ...)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return hashlib.sha1(b"l:" + os.readlink(path)).hexdigest()
    if stat.S_ISREG(st.st_mode):
        digest = hashlib.sha1(b"f:%o:" % (st.st_mode & 0o111))
        with open(path, "rb") as f:
            while True:
                block = f.read(1 << 20)
                if not block:
                    break
                digest.update(block)
        return digest.hexdigest()
    return None


def walk_entries(root):
    """Relative paths (bytes) of the regular files and symlinks under root."""
    root = os.fsencode(root)
    found = []
    for directory, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(directory, d))]:
            found.append(os.path.relpath(os.path.join(directory, name), root))
    return sorted(found)


def manifest_for(root, paths=None):
    root = os.fsencode(root)
    lines = []
    for rel in paths if paths is not None else walk_entries(root):
        digest = entry_hash(os.path.join(root, rel))
        if digest:
            lines.append(b"%s %s\n" % (digest.encode(), rel.hex().encode()))
    return b"".join(lines)


def expected_changed(manifest, dest_root):
    changed = []
    for line in manifest.splitlines():
        digest, hex_path = line.split(b" ")
        path = bytes.fromhex(hex_path.decode())
        if entry_hash(os.path.join(os.fsencode(dest_root), path)) != digest.decode():
            changed.append(hex_path.decode())
    return changed


def tar_gz(members):
    """members: list of (TarInfo, bytes or None) -> tar.gz bytes."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.GNU_FORMAT) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return out.getvalue()


def member(name, kind=tarfile.REGTYPE, data=None, mode=0o644, linkname=""):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.linkname = linkname
    info.mtime = 1_700_000_000
    return info, (data if data is not None else (b"" if kind == tarfile.REGTYPE else None))


def snapshot(root, skip):
    """{path: (mode, size, mtime_ns, content hash)} of everything under root
    except the `skip` subtrees (paths boxd itself changes as it runs: its run
    dir, where spares come and go, and its log), to prove nothing else changed."""
    skip = tuple(os.path.abspath(path) for path in skip)

    def skipped(path):
        path = os.path.abspath(path)
        return any(path == s or path.startswith(s + os.sep) for s in skip)

    seen = {}
    for directory, dirs, files in os.walk(root):
        if skipped(directory):
            continue
        for name in dirs + files:
            path = os.path.join(directory, name)
            if skipped(path):
                continue
            st = os.lstat(path)
            seen[path] = (st.st_mode, st.st_size, st.st_mtime_ns, entry_hash(path))
    return seen
