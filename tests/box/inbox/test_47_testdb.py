"""psbx-testdb in the box: a fresh database per name in the box's Docker,
up only once the server takes connections, its URL in a 0600 env file,
its data on a tmpfs; reset, two side by side, down, the MySQL path, a
database per Go package, and bad input. The box has no network, so the
servers' images are built here from Debian's packages (dbimage); they read
the official images' variables."""
import os
import re
import stat

from boxtest import figure, run, sh

POSTGRES = "psbx-test-postgres"
MARIADB = "psbx-test-mariadb"
ENV_DIR = "/work/.sbx/testdb"
URL = re.compile(r"DATABASE_URL=postgres://test:[0-9a-f]{16}@127\.0\.0\.1:(\d+)/test\?sslmode=disable")


def ok(cmd, timeout=300):
    r = run(cmd, timeout=timeout)
    assert r["exitCode"] == 0, r
    return r


def up_seconds(stderr):
    m = re.search(r"up in ([0-9.]+) s", stderr)
    assert m, stderr
    return float(m.group(1))


def containers():
    r = sh("docker ps -a --filter label=psbx-testdb --format '{{.Names}}'")
    return sorted(r.stdout.split())


def check_database_images_build_offline():
    # Side by side: two vCPUs, and each spends much of its time in docker import.
    r = ok(f"bash /boxtest/dbimage postgres {POSTGRES} & p=$!; bash /boxtest/dbimage mariadb {MARIADB} "
           "&& wait $p", 600)
    return f"both built in {r['durationMs'] / 1000:.1f} s"


def check_up_returns_once_the_server_takes_connections():
    # Two names started side by side; psql connects to each the moment its
    # up returns, in the same command: no retry.
    r = ok(f"(psbx-testdb up two --image {POSTGRES} && . {ENV_DIR}/two.env && "
           "psql \"$DATABASE_URL\" -X -Atc 'select 2') & two=$!; "
           f"psbx-testdb up one --image {POSTGRES} && . {ENV_DIR}/one.env && "
           "psql \"$DATABASE_URL\" -X -Atc 'select 40 + 2' && wait $two")
    assert {"2", "42"} <= set(r["stdout"].split()), r
    seconds = up_seconds(r["stderr"])
    figure("testdb_up_postgres_s", seconds)
    path = f"{ENV_DIR}/one.env"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, oct(os.stat(path).st_mode)
    text = open(path).read()
    assert URL.fullmatch(text.strip()) and text.endswith("\n"), text
    assert text.strip() in r["stdout"], r["stdout"]
    mounts = sh("docker exec psbx-testdb-one cat /proc/mounts").stdout
    assert re.search(r"^tmpfs /var/lib/postgresql/data tmpfs ", mounts, re.M), mounts
    return f"up in {seconds:.1f} s (two at once); psql connected at once; env file 0600; data on tmpfs"


def check_reset_gives_an_empty_database_within_a_second():
    env = f". {ENV_DIR}/one.env"
    before = open(f"{ENV_DIR}/one.env").read()
    times = []
    for _ in range(3):
        ok(f"{env} && psql \"$DATABASE_URL\" -X -qc 'create table kept (x int); insert into kept values (1)'")
        r = ok("s=$(date +%s%N); psbx-testdb reset one >/dev/null; e=$(date +%s%N); echo $(((e - s) / 1000000))")
        times.append(int(r["stdout"].split()[-1]))
        tables = ok(f"{env} && psql \"$DATABASE_URL\" -X -Atc \"select count(*) from pg_tables where schemaname = 'public'\"")
        assert tables["stdout"].strip() == "0", tables
    median = sorted(times)[1]
    figure("testdb_reset_ms", median)
    assert median < 1000, f"reset took {times} ms"
    assert open(f"{ENV_DIR}/one.env").read() == before, "the URL changed"
    return f"reset in {times} ms (median {median}), same URL, no table left"


def check_two_names_run_side_by_side():
    urls = [open(f"{ENV_DIR}/{name}.env").read().strip() for name in ("one", "two")]
    ports = [URL.fullmatch(u).group(1) for u in urls]
    assert ports[0] != ports[1], urls
    ok(f". {ENV_DIR}/one.env && psql \"$DATABASE_URL\" -X -qc 'create table only_one (x int)'")
    r = ok(f". {ENV_DIR}/two.env && psql \"$DATABASE_URL\" -X -Atc \"select count(*) from pg_tables where tablename = 'only_one'\"")
    assert r["stdout"].strip() == "0", r
    listed = ok("psbx-testdb ls")["stdout"]
    assert re.search(r"^one +postgres +running", listed, re.M) and re.search(r"^two +postgres +running", listed, re.M), listed
    return f"ports {ports[0]} and {ports[1]}, tables apart"


def check_down_removes_everything():
    volumes = sh("docker volume ls -q").stdout.split()
    for name in ("one", "two"):
        r = ok(f"psbx-testdb down {name}")
        assert f"{name} is down" in r["stderr"], r
        assert not os.path.exists(f"{ENV_DIR}/{name}.env")
    assert containers() == [], containers()
    assert sh("docker volume ls -q").stdout.split() == volumes
    again = run("psbx-testdb down one")
    assert again["exitCode"] == 1 and "no test database one" in again["stderr"], again
    return "containers, env files gone; no volume left"


def check_mysql_path_up_reset_down():
    r = ok(f"psbx-testdb up my --mysql --image {MARIADB}")
    seconds = up_seconds(r["stderr"])
    figure("testdb_up_mysql_s", seconds)
    url = open(f"{ENV_DIR}/my.env").read().strip()
    m = re.fullmatch(r"DATABASE_URL=mysql://test:([0-9a-f]{16})@127\.0\.0\.1:(\d+)/test", url)
    assert m, url
    client = f"mysql -h127.0.0.1 -P{m.group(2)} -utest -p{m.group(1)} test"
    # At once, as with PostgreSQL: the probe waited for the handshake.
    ok(f"{client} -e 'create table kept (x int)'")
    r = ok(f"psbx-testdb reset my && {client} -N -e 'show tables'")
    assert "kept" not in r["stdout"], r
    ok("psbx-testdb down my")
    assert containers() == []
    return f"up in {seconds:.1f} s, reset empties, down"


GO_TEST = """package {pkg}

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Each package makes the same table: in a shared database the packages,
// run side by side, would trip over each other.
func TestOwnDatabase(t *testing.T) {{
	url := os.Getenv("DATABASE_URL")
	out, err := exec.Command("psql", url, "-X", "-q", "-v", "ON_ERROR_STOP=1",
		"-c", "CREATE TABLE t (x int)").CombinedOutput()
	if err != nil {{
		t.Fatalf("psql %s: %v: %s", url, err, out)
	}}
	if err := os.WriteFile(filepath.Join(os.Getenv("GOTEST_OUT"), "{pkg}"), []byte(url), 0o644); err != nil {{
		t.Fatal(err)
	}}
}}
"""


def check_gotest_gives_every_package_its_own_database():
    module, out = "/tmp/gomod", "/tmp/gomod-out"
    os.makedirs(out, exist_ok=True)
    os.makedirs(module, exist_ok=True)
    with open(f"{module}/go.mod", "w") as f:
        f.write("module example.com/three\n\ngo 1.19\n")
    for pkg in ("alpha", "beta", "gamma"):
        os.makedirs(f"{module}/{pkg}", exist_ok=True)
        with open(f"{module}/{pkg}/{pkg}_test.go", "w") as f:
            f.write(GO_TEST.format(pkg=pkg))
    r = run(f"cd {module} && psbx-testdb gotest --image {POSTGRES} -count=1 ./...", timeout=900,
            env={"GOTEST_OUT": out, "GOCACHE": "/tmp/gocache", "GOPATH": "/tmp/gopath"})
    assert r["exitCode"] == 0, r
    urls = {pkg: open(f"{out}/{pkg}").read() for pkg in ("alpha", "beta", "gamma")}
    databases = {u.rsplit("/", 1)[1].split("?")[0] for u in urls.values()}
    assert len(databases) == 3, urls
    assert all(d.startswith("pkg_") for d in databases), databases
    assert containers() == [], containers()
    return f"3 packages, 3 databases ({', '.join(sorted(databases))}), server gone after"


def check_bad_input_gets_a_clear_error():
    for name in ("Bad!", "../x", "_x", "a" * 49):
        r = run(f"psbx-testdb up '{name}'")
        assert r["exitCode"] == 2 and "is not a test database name" in r["stderr"], r
    r = run("psbx-testdb reset nosuch")
    assert r["exitCode"] == 1 and "no test database nosuch" in r["stderr"], r
    r = run("psbx-testdb up x", env={"DOCKER_HOST": "unix:///run/no-docker.sock"})
    assert r["exitCode"] == 1 and "Docker is not running" in r["stderr"], r
    r = run("psbx-testdb gotest -exec foo ./...")
    assert r["exitCode"] == 2 and "drop yours" in r["stderr"], r
    # No network: the pull fails, as Docker says, and nothing is left.
    r = run("psbx-testdb up ghost --image psbx-no-such-image:1")
    assert r["exitCode"] == 1 and "did not start" in r["stderr"], r
    assert containers() == [] and not os.path.exists(f"{ENV_DIR}/ghost.env")
    return "bad names 2, unknown 1, no Docker 1, -exec 2, missing image 1 with Docker's words"
