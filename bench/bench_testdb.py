#!/usr/bin/python3
"""psbx-testdb side by side with what a user would otherwise do in the box.

Rows: name | psbx-testdb | baseline | ratio
  up (postgres)       `psbx-testdb up` until it returns (the server answers)  vs
                      `docker run -d` then `pg_isready -h 127.0.0.1` every
                      0.5 s until it says so (the usual wait loop)
  fresh database      `psbx-testdb reset` (drop and create in the running
                      server)  vs  `docker rm -f` and the up above again
  up (mysql)          `psbx-testdb up --mysql` vs docker run and
                      `mysqladmin ping` every 0.5 s
Needs a running Docker. The images: PSBX_TESTDB_IMAGE / PSBX_TESTDB_MYSQL_IMAGE,
else the stand-ins tests/box/inbox/dbimage builds from this machine's Debian
PostgreSQL and MariaDB packages (as the box's checks do; no network needed).

    bench/bench_testdb.py"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

from benchlib import percentile, row

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("BOXD_BUILD_DIR", os.path.join(HERE, "..", "build"))
TESTDB = os.path.join(BUILD, "boxd", "testdb", "psbx-testdb")
DBIMAGE = os.path.join(HERE, "..", "tests", "box", "inbox", "dbimage")
ROUNDS_UP = 5
ROUNDS_RESET = 20


def sh(*args, **kw):
    return subprocess.run(args, capture_output=True, text=True, check=True, **kw)


def image(variable, kind, tag):
    if os.environ.get(variable):
        return os.environ[variable]
    sh(DBIMAGE, kind, tag)
    return tag


def seconds(fn):
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def docker_up(name, img, env, port, ready):
    """docker run, then the readiness command every 0.5 s; removed after."""
    args = ["docker", "run", "-d", "--name", name, "--tmpfs", "/var/lib/postgresql/data",
            "--tmpfs", "/var/lib/mysql", "-p", f"127.0.0.1::{port}"]
    for key, value in env.items():
        args += ["-e", f"{key}={value}"]
    sh(*args, img)
    host_port = sh("docker", "port", name, f"{port}/tcp").stdout.split()[0].rsplit(":", 1)[1]
    while subprocess.run([*ready, host_port], capture_output=True).returncode != 0:
        time.sleep(0.5)


def compare_up(label, ours, theirs, rounds):
    a, b = [], []
    for _ in range(rounds):
        a.append(seconds(ours))
        b.append(seconds(theirs))
    pa, pb = percentile(a, 50), percentile(b, 50)
    row(label, f"{pa * 1000:.0f} ms", f"{pb * 1000:.0f} ms", f"{pb / pa:.1f}x")


def main():
    if shutil.which("docker") is None or subprocess.run(["docker", "info"], capture_output=True).returncode:
        print("testdb: no running Docker here; skipped")
        return 0
    pg = image("PSBX_TESTDB_IMAGE", "postgres", "psbx-test-postgres")
    my = image("PSBX_TESTDB_MYSQL_IMAGE", "mariadb", "psbx-test-mariadb")
    env = dict(os.environ, PSBX_TESTDB_DIR=tempfile.mkdtemp(prefix="bench-testdb."))
    pg_env = {"POSTGRES_USER": "test", "POSTGRES_PASSWORD": "pw", "POSTGRES_DB": "test"}
    pg_check = ["sh", "-c", "PGPASSWORD=pw psql -h 127.0.0.1 -p \"$0\" -U test -d test -Xqc 'select 1'"]
    my_env = {"MYSQL_ROOT_PASSWORD": "pw", "MYSQL_USER": "test", "MYSQL_PASSWORD": "pw", "MYSQL_DATABASE": "test"}
    my_check = ["sh", "-c", "mysqladmin -h 127.0.0.1 -P \"$0\" -utest -ppw ping"]

    def ours_up(flags, img):
        def go():
            sh(TESTDB, "up", "bench", *flags, "--image", img, env=env)
            sh(TESTDB, "down", "bench", env=env)
        return go

    def theirs_up(img, db_env, port, check):
        def go():
            docker_up("bench-baseline", img, db_env, port, check)
            sh("docker", "rm", "-f", "bench-baseline")
        return go

    compare_up("testdb up, postgres (p50)", ours_up([], pg), theirs_up(pg, pg_env, 5432, pg_check), ROUNDS_UP)

    sh(TESTDB, "up", "bench", "--image", pg, env=env)
    resets = [seconds(lambda: sh(TESTDB, "reset", "bench", env=env)) for _ in range(ROUNDS_RESET)]
    sh(TESTDB, "down", "bench", env=env)
    anew = [seconds(theirs_up(pg, pg_env, 5432, pg_check)) for _ in range(ROUNDS_UP)]
    pa, pb = percentile(resets, 50), percentile(anew, 50)
    row("fresh database: reset vs rm + run (p50)", f"{pa * 1000:.0f} ms", f"{pb * 1000:.0f} ms", f"{pb / pa:.1f}x")

    compare_up("testdb up, mysql (p50)", ours_up(["--mysql"], my), theirs_up(my, my_env, 3306, my_check), ROUNDS_UP)
    return 0


sys.exit(main())
