"""The Debian package, installed into a fresh Debian 12 tree (debootstrap
--variant=minbase, cached), runs: boxd --version, boxd --dev and boxctl health
inside the tree (chroot), the units are enabled and the config is a conffile.

Needs root (chroot, mount) and the packaging tools (packaging/install-deps
--packaging); the first run needs Debian's mirror (the one apt uses here)."""
import glob
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("BOXD_TEST_CACHE", "/var/cache/boxd-tests")
TREE_CACHE = os.path.join(CACHE, "debian12-minbase.tar.gz")
APT_ARCHIVES = os.path.join(CACHE, "apt-archives")

BUILD_DIR = os.environ.get("BOXD_BUILD_DIR", os.path.join(TOP, "build"))

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: chroot and mount"),
    # The package is built from source without sanitizers, whatever the build
    # dir under test: once per tests/run is enough.
    pytest.mark.skipif("asan" in os.path.basename(BUILD_DIR.rstrip("/")),
                       reason="the package test runs with the plain build only"),
]


def debian_mirror():
    """The Debian mirror apt uses on this machine (deb822 or one-line sources)."""
    texts = []
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*")):
        try:
            with open(path) as f:
                texts.append(f.read())
        except OSError:
            pass
    for text in texts:
        for url in re.findall(r"(?:URIs:\s*|^deb\s+(?:\[[^\]]*\]\s+)?)(\S+)", text, re.M):
            if "security" not in url and url.startswith("http"):
                return url.rstrip("/")
    return "http://deb.debian.org/debian"


def run(argv, timeout=600, **kwargs):
    if "input" not in kwargs:
        kwargs.setdefault("stdin", subprocess.DEVNULL)  # boxctl exec passes stdin on
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kwargs)


def cached_tree():
    """The minbase tarball, made once with debootstrap (several minutes)."""
    if os.path.exists(TREE_CACHE):
        return TREE_CACHE
    if not shutil.which("debootstrap"):
        pytest.skip("debootstrap is missing: run packaging/install-deps --packaging")
    os.makedirs(CACHE, exist_ok=True)
    mirror = debian_mirror()
    work = tempfile.mkdtemp(prefix="tree.", dir=CACHE)
    try:
        result = run(["debootstrap", "--variant=minbase", "bookworm", work, mirror], timeout=1800)
        if result.returncode != 0:
            pytest.skip(f"debootstrap cannot reach the Debian mirror {mirror}: "
                        f"{result.stderr.strip().splitlines()[-1:]}")
        with tarfile.open(TREE_CACHE + ".tmp", "w:gz") as tar:
            tar.add(work, arcname=".")
        os.rename(TREE_CACHE + ".tmp", TREE_CACHE)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return TREE_CACHE


@pytest.fixture(scope="module")
def deb(tmp_path_factory):
    for tool in ("dpkg-buildpackage", "dh", "lintian"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is missing: run packaging/install-deps --packaging")
    out = tmp_path_factory.mktemp("dist")
    result = run([os.path.join(TOP, "packaging", "build-deb"), str(out)], timeout=1800)
    assert result.returncode == 0, "build-deb failed:\n" + result.stdout[-3000:] + result.stderr[-3000:]
    debs = glob.glob(str(out / "boxd_*.deb"))
    assert len(debs) == 1
    return debs[0]


@pytest.fixture(scope="module")
def root(deb, tmp_path_factory):
    """A fresh Debian 12 tree with the package installed by apt (dependencies
    from the mirror, downloads kept in the cache between runs)."""
    tarball = cached_tree()
    root = str(tmp_path_factory.mktemp("root"))
    run(["tar", "-xzf", tarball, "-C", root], timeout=600).check_returncode()
    shutil.copy("/etc/resolv.conf", os.path.join(root, "etc/resolv.conf"))
    os.makedirs(APT_ARCHIVES + "/partial", exist_ok=True)
    archives = os.path.join(root, "var/cache/apt/archives")
    mounts = []
    try:
        for argv, target in ((["mount", "-t", "proc", "proc"], "proc"),
                             (["mount", "--bind", APT_ARCHIVES], "var/cache/apt/archives")):
            path = os.path.join(root, target)
            run(argv + [path]).check_returncode()
            mounts.append(path)
        shutil.copy(deb, os.path.join(root, "tmp/boxd.deb"))
        # No service may start inside the tree: there is no systemd there.
        with open(os.path.join(root, "usr/sbin/policy-rc.d"), "w") as f:
            f.write("#!/bin/sh\nexit 101\n")
        os.chmod(os.path.join(root, "usr/sbin/policy-rc.d"), 0o755)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C")
        update = run(["chroot", root, "apt-get", "update"], env=env)
        if update.returncode != 0:
            pytest.skip("apt-get update inside the tree cannot reach the Debian mirror: "
                        + update.stderr.strip()[-300:])
        install = run(["chroot", root, "apt-get", "install", "-y", "--no-install-recommends",
                       "/tmp/boxd.deb"], env=env)
        assert install.returncode == 0, "apt-get install of the package failed:\n" + install.stdout[-3000:] + install.stderr[-3000:]
        yield root
    finally:
        for path in reversed(mounts):
            run(["umount", "-l", path])
        assert not os.path.ismount(archives)


def chroot(root, *argv, timeout=60):
    return run(["chroot", root] + list(argv), timeout=timeout)


def test_package_installs_programs_units_and_config(root):
    listing = chroot(root, "dpkg", "-L", "boxd").stdout.split()
    for path in ("/usr/bin/boxd", "/usr/bin/boxctl", "/lib/systemd/system/boxd.service",
                 "/lib/systemd/system/boxd-xvfb.service", "/lib/systemd/system/boxd-dns.service",
                 "/lib/systemd/system/docker.service.d/boxd-dns.conf", "/etc/boxd/boxd.conf",
                 "/usr/share/man/man8/boxd.8.gz", "/usr/share/man/man1/boxctl.1.gz",
                 "/usr/share/bash-completion/completions/boxctl",
                 "/usr/libexec/boxd/git-credential-boxd", "/usr/bin/docker-credential-boxd",
                 "/usr/bin/psbx-testdb", "/usr/share/man/man1/psbx-testdb.1.gz"):
        assert path in listing, f"{path} is not in the package"
    with open(os.path.join(TOP, "shims", "meson.build")) as f:
        if "'boxd-shim'" in f.read():
            assert any(p.endswith("/boxd-shim") for p in listing), "boxd-shim is not in the package"
    # dh_installsystemd enabled the units at install (deb-systemd-helper).
    wants = os.path.join(root, "etc/systemd/system/multi-user.target.wants")
    assert {"boxd-dns.service", "boxd-xvfb.service", "boxd.service"} <= set(os.listdir(wants))
    # git anywhere in the box asks boxd (postinst's block in /etc/gitconfig).
    with open(os.path.join(root, "etc/gitconfig")) as f:
        assert "helper = /usr/libexec/boxd/git-credential-boxd" in f.read()
    conffiles = chroot(root, "dpkg-query", "-W", "-f=${Conffiles}", "boxd").stdout
    assert "/etc/boxd/boxd.conf" in conffiles
    size = chroot(root, "dpkg-query", "-W", "-f=${Installed-Size}", "boxd").stdout
    print(f"installed size: {size} KiB")


def test_boxd_version_in_tree(root):
    result = chroot(root, "/usr/bin/boxd", "--version")
    assert result.returncode == 0, result.stderr
    assert "0.1.0" in result.stdout + result.stderr


def test_boxd_dev_and_boxctl_health_in_tree(root):
    # The packaged config must parse too: --config with it plus --dev.
    socket = "/tmp/boxd-test.sock"
    proc = subprocess.Popen(["chroot", root, "sh", "-c",
                             f"cd /root && exec /usr/bin/boxd --config /etc/boxd/boxd.conf --dev --socket {socket}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(root + socket):
            assert proc.poll() is None, "boxd --dev exited: " + proc.stderr.read()
            assert time.monotonic() < deadline, "boxd --dev did not create its socket in 20 s"
            time.sleep(0.1)
        result = None
        while time.monotonic() < deadline:
            result = chroot(root, "/usr/bin/boxctl", "--socket", socket, "health")
            if result.returncode == 0:
                break
            time.sleep(0.2)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("boxd 0.1.0"), result.stdout
        # Once boxd-shim is packaged, a command runs through it in the tree.
        listing = chroot(root, "dpkg", "-L", "boxd").stdout.split()
        if any(p.endswith("/boxd-shim") for p in listing):
            result = chroot(root, "/usr/bin/boxctl", "--socket", socket, "exec", "--", "echo", "hello from the package")
            assert result.returncode == 0, result.stdout + result.stderr
            assert "hello from the package" in result.stdout
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
