"""Credentials the box's tools pick up (docs/credentials.md), in the booted
box with its own git, Docker and botocore: a private repository served
over HTTP with basic auth is cloned, pushed to and fetched from with a
plain URL through git-credential-boxd; Debian's docker-registry with
htpasswd auth takes a push and gives a pull through docker-credential-boxd;
the AWS role reaches a later command and botocore. A rotated secret counts
at the next call, a missing or wrong one gets git's and Docker's own
errors, and no file in the box holds a value afterwards (everything
offline: the servers run here)."""
import base64
import contextlib
import http.client
import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
import tempfile
import time

from boxtest import BUILD_IMAGE, IMAGE, api, figure, health, run, wait_until
from githttp import GitHttp

# Drawn at each run: no file can hold them but by a leak (this file's text does not).
TOKEN = "ghp_" + secrets.token_hex(16)
TOKEN2 = "ghp_" + secrets.token_hex(16)
USER = "x-access-token"
REG_USER = "boxtest-pusher"
REG_PASSWORD = "reg-" + secrets.token_hex(16)
REG_WRONG = "reg-" + secrets.token_hex(16)
AWS_TOKEN = "eyJhbGciOiJSUzI1NiJ9." + secrets.token_urlsafe(48) + ".sig-" + secrets.token_hex(8)
ARN = "arn:aws:iam::123456789012:role/boxtest"


def basic(user, value):
    """The value as a basic-auth header carries it, and a Docker `auths` entry."""
    return base64.b64encode(f"{user}:{value}".encode()).decode()


# Every value set here, and the headers made of them.
VALUES = [TOKEN, TOKEN2, REG_PASSWORD, REG_WRONG, AWS_TOKEN, basic(USER, TOKEN),
          basic(USER, TOKEN2), basic(REG_USER, REG_PASSWORD), basic(REG_USER, REG_WRONG)]
WORK = "/work/boxtest-credentials"  # the clones, made by commands through boxd
IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t"}
DOCKER_CONFIG = "/root/.docker/config.json"  # root's: boxd's commands run as root here
# A file whose change time is the start of these checks: a file changed
# later is the only kind that can hold a value drawn above.
STAMP = "/run/boxtest-credentials.stamp"


def since_start():
    if not os.path.exists(STAMP):
        open(STAMP, "w").close()
    return STAMP


def box(cmd, timeout=120, **fields):
    result = run(cmd, timeout, **fields)
    assert result["exitCode"] == 0, f"{cmd}: {result}"
    return result


def last_line(result):
    """What a failed command said last, for a check's detail."""
    lines = (result["stderr"] or result["stdout"]).strip().splitlines()
    return lines[-1] if lines else ""


def set_secrets(**values):
    """PUT /v1/secrets replaces the whole set: empty afterwards, as later areas expect."""
    api("PUT", "/v1/secrets", {"secrets": values})


def put_credential(kind, name, username, secret):
    key = "host" if kind == "git" else "registry"
    return api("PUT", f"/v1/credentials/{kind}", {key: name, "username": username, "secret": secret})


def drop_credential(kind, name):
    """DELETE, whether or not the check got as far as setting it (404 then)."""
    api("DELETE", f"/v1/credentials/{kind}/{name}", expect=None)


def files_holding(values, *tops, newer=None):
    """The files under tops that hold any of the values (only their names
    are read back: a value is never printed, and this driver's output goes
    to the journal, which is searched too). With newer, only the files
    changed since that file was (ctime, which no tool sets back). Returns
    (names, how many files were searched)."""
    patterns = [arg for value in values for arg in ("-e", value)]
    if newer:
        listed = subprocess.run(["find", *tops, "-type", "f", "-cnewer", newer, "-print0"],
                                capture_output=True, timeout=900).stdout
    else:
        listed = subprocess.run(["find", *tops, "-type", "f", "-print0"],
                                capture_output=True, timeout=900).stdout
    # -D skip: sockets and fifos (boxd's, Docker's) are not read.
    found = subprocess.run(["xargs", "-0", "-r", "grep", "-lsF", "-D", "skip", *patterns],
                           input=listed, capture_output=True, timeout=900).stdout
    return found.decode(errors="replace").splitlines(), listed.count(b"\0")


def git(*args):
    """git run by this driver (the servers' side), not through boxd."""
    done = subprocess.run(["git", *args], capture_output=True, text=True,
                          env=dict(os.environ, **IDENTITY), timeout=60)
    assert done.returncode == 0, f"git {args}: {done.stderr}"
    return done.stdout


@contextlib.contextmanager
def git_server():
    """A private repository with one commit, pushes allowed, served by `git
    http-backend` behind basic auth (githttp.py, the host tests' server) at
    http://127.0.0.1:PORT/private.git: only USER with TOKEN gets in."""
    top = tempfile.mkdtemp(prefix="boxtest-git.")
    bare, seed = f"{top}/private.git", f"{top}/seed"
    git("init", "-q", "--bare", "-b", "main", bare)
    git("init", "-q", "-b", "main", seed)
    with open(f"{seed}/README", "w") as f:
        f.write("private\n")
    git("-C", seed, "add", "README")
    git("-C", seed, "commit", "-qm", "first")
    git("-C", seed, "push", "-q", bare, "main")
    git("-C", bare, "config", "http.receivepack", "true")
    server = GitHttp(top, USER, TOKEN)
    server.bare = bare
    os.makedirs(WORK, exist_ok=True)
    try:
        yield server
    finally:
        server.close()
        shutil.rmtree(top, ignore_errors=True)
        shutil.rmtree(WORK, ignore_errors=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_status(host, path):
    conn = http.client.HTTPConnection(host, timeout=5)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    finally:
        conn.close()


REGISTRY_CONFIG = """version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: {top}/data
http:
  addr: {host}
  secret: {secret}
auth:
  htpasswd:
    realm: boxtest
    path: {top}/htpasswd
"""


@contextlib.contextmanager
def registry():
    """Debian's docker-registry with htpasswd auth (REG_USER, REG_PASSWORD,
    bcrypt as it wants) on 127.0.0.1:PORT, plain HTTP: Docker allows that
    for 127.0.0.0/8 without being told. Yields (host, storage dir)."""
    top = tempfile.mkdtemp(prefix="boxtest-registry.")
    host = f"127.0.0.1:{free_port()}"
    entry = subprocess.run(["htpasswd", "-Bbn", REG_USER, REG_PASSWORD], capture_output=True,
                           text=True, check=True).stdout.strip()
    with open(f"{top}/htpasswd", "w") as f:
        f.write(entry + "\n")
    with open(f"{top}/config.yml", "w") as f:
        f.write(REGISTRY_CONFIG.format(top=top, host=host, secret=secrets.token_hex(16)))
    log = open(f"{top}/log", "w+")
    proc = subprocess.Popen(["/usr/bin/docker-registry", "serve", f"{top}/config.yml"],
                            stdout=log, stderr=subprocess.STDOUT)

    def up():
        if proc.poll() is not None:
            log.seek(0)
            raise AssertionError(f"docker-registry exited {proc.returncode}: {log.read()[-800:]}")
        try:
            return http_status(host, "/v2/") == 401  # up, and asking for a password
        except OSError:
            return False
    try:
        wait_until("docker-registry answering", up, 60)
        yield host, f"{top}/data"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(top, ignore_errors=True)


def docker_config():
    """Root's Docker config as text and as JSON ({} when there is none)."""
    try:
        with open(DOCKER_CONFIG) as f:
            text = f.read()
    except FileNotFoundError:
        return "", {}
    return text, json.loads(text)


# ---- git ----

def check_git_clone_push_fetch_with_a_plain_url():
    since_start()
    with git_server() as server:
        set_secrets(GIT_TOKEN=TOKEN)
        try:
            table = put_credential("git", server.host, USER, "GIT_TOKEN")
            assert table["git"] == [{"host": server.host, "username": USER, "secret": "GIT_TOKEN",
                                     "secretSet": True}], table
            url = server.url("private.git")
            # git finds boxd's helper in /etc/gitconfig, where the package put it.
            helpers = box("git config --show-origin --get-all credential.helper")["stdout"]
            assert helpers == "file:/etc/gitconfig\t/usr/libexec/boxd/git-credential-boxd\n", helpers
            cloned = box(f"git clone -q {url} {WORK}/a && cat {WORK}/a/README")
            assert cloned["stdout"] == "private\n", cloned
            figure("credentials-git-clone-ms", cloned["durationMs"])
            box(f"git clone -q {url} {WORK}/b")
            box("echo more >> README && git commit -qam second && git push -q origin main",
                cwd=f"{WORK}/a", env=IDENTITY)
            pushed = git("-C", server.bare, "log", "--format=%s", "main").split()
            assert pushed == ["second", "first"], pushed
            fetched = box("git fetch -q && git log --format=%s origin/main", cwd=f"{WORK}/b")
            assert fetched["stdout"].split() == ["second", "first"], fetched
            # git's view of the clone, read here rather than through boxd,
            # whose answers would show a leaked token as ****.
            shown = subprocess.run("git config -l --show-origin; git remote -v", shell=True,
                                   cwd=f"{WORK}/a", env=dict(os.environ, HOME="/root"),
                                   capture_output=True, text=True).stdout
            assert TOKEN not in shown and USER not in shown, "git's config or remotes name the credential"
            assert f"origin\t{url} (fetch)" in shown, shown
            leaks, searched = files_holding([TOKEN, basic(USER, TOKEN)], "/root", "/work", "/tmp")
            assert not leaks, f"files holding the token: {leaks}"
        finally:
            drop_credential("git", server.host)
            set_secrets()
    return (f"clone {cloned['durationMs']} ms, push, fetch with {url}; the token in none of "
            f"{searched} files of /root /work /tmp, nor in git's config")


def check_git_without_the_credential_fails_with_its_own_error():
    with git_server() as server:
        set_secrets(GIT_TOKEN=TOKEN)  # a secret alone is no credential for any host
        try:
            url = server.url("private.git")
            refused = run(f"git clone -q {url} {WORK}/c", 120)
            # No helper answered and there is no terminal to ask on: git's own words.
            assert refused["exitCode"] == 128 and "could not read Username" in refused["stderr"], refused
            assert server.refused >= 1, "git never reached the server"
            put_credential("git", server.host, USER, "GIT_TOKEN")
            box(f"git clone -q {url} {WORK}/d")
            table = api("DELETE", f"/v1/credentials/git/{server.host}")
            assert table["git"] == [], table
            again = run(f"git clone -q {url} {WORK}/e", 120)
            assert again["exitCode"] == 128 and "could not read Username" in again["stderr"], again
        finally:
            drop_credential("git", server.host)
            set_secrets()
    return f"refused ({last_line(refused)}), cloned once set, refused after DELETE"


def check_git_rotated_secret_counts_at_the_next_call():
    with git_server() as server:
        set_secrets(GIT_TOKEN=TOKEN)
        try:
            put_credential("git", server.host, USER, "GIT_TOKEN")
            box(f"git clone -q {server.url('private.git')} {WORK}/a")
            server.password = TOKEN2  # the host rotated the token: the old one is refused
            stale = run("git fetch -q", 120, cwd=f"{WORK}/a")
            assert stale["exitCode"] == 128 and "Authentication failed" in stale["stderr"], stale
            set_secrets(GIT_TOKEN=TOKEN2)  # and the box is given the new one
            box("git fetch -q", cwd=f"{WORK}/a")
            box("echo rotated >> README && git commit -qam rotated && git push -q origin main",
                cwd=f"{WORK}/a", env=IDENTITY)
            pushed = git("-C", server.bare, "log", "-1", "--format=%s", "main").strip()
            assert pushed == "rotated", pushed
            leaks, searched = files_holding([TOKEN, TOKEN2, basic(USER, TOKEN), basic(USER, TOKEN2)],
                                            "/root", "/work", "/tmp")
            assert not leaks, f"files holding a token: {leaks}"
        finally:
            drop_credential("git", server.host)
            set_secrets()
    return f"old token refused by git ({last_line(stale)}), the new one fetched and pushed"


# ---- Docker ----

STAMPED = r"""set -e
d=$(mktemp -d)
echo {stamp} >"$d/stamp"
printf 'FROM {base}\nCOPY stamp /stamp\n' >"$d/Dockerfile"
docker build -q -t {image} "$d"
rm -rf "$d"
"""


def check_docker_push_and_pull_through_the_helper():
    since_start()
    box(BUILD_IMAGE, 300)
    stamp = secrets.token_hex(8)
    with registry() as (host, storage):
        image = f"{host}/boxtest/credentials:{stamp}"
        set_secrets(REGISTRY_PASSWORD=REG_PASSWORD)
        try:
            table = put_credential("registry", host, REG_USER, "REGISTRY_PASSWORD")
            assert table["registries"] == [{"registry": host, "username": REG_USER,
                                            "secret": "REGISTRY_PASSWORD", "secretSet": True}], table
            # Docker is sent to the helper for this registry, and given nothing else.
            _, config = docker_config()
            assert config.get("credHelpers", {}).get(host) == "boxd", config
            assert host not in config.get("auths", {}), config
            assert stat.S_IMODE(os.stat(DOCKER_CONFIG).st_mode) == 0o600, oct(os.stat(DOCKER_CONFIG).st_mode)
            listed = json.loads(box("docker-credential-boxd list")["stdout"])
            assert listed == {host: REG_USER}, listed
            # An image with a layer of its own, so the pull below downloads it.
            box(STAMPED.format(stamp=stamp, base=IMAGE, image=image), 300)
            pushed = box(f"docker push {image}", 300)
            figure("credentials-docker-push-s", f"{pushed['durationMs'] / 1000:.1f}")
            assert "digest: sha256:" in pushed["stdout"], pushed
            assert os.path.isdir(f"{storage}/docker/registry/v2/repositories/boxtest/credentials"), \
                os.listdir(storage)
            box(f"docker rmi {image}")
            pulled = box(f"docker pull {image}", 300)
            figure("credentials-docker-pull-s", f"{pulled['durationMs'] / 1000:.1f}")
            assert "Downloaded newer image" in pulled["stdout"], pulled
            inside = box(f"docker run --rm --network none {image} cat /stamp")["stdout"]
            assert inside.strip() == stamp, inside
            text, config = docker_config()
            assert REG_PASSWORD not in text and basic(REG_USER, REG_PASSWORD) not in text, \
                f"{DOCKER_CONFIG} holds the password, keys {sorted(config)}"
            leaks, searched = files_holding([REG_PASSWORD, basic(REG_USER, REG_PASSWORD)], "/root", "/work", "/tmp")
            assert not leaks, f"files holding the password: {leaks}"
        finally:
            drop_credential("registry", host)
            set_secrets()
            run(f"docker rmi {image}", 120)
    return (f"push {pushed['durationMs'] / 1000:.1f} s, pull {pulled['durationMs'] / 1000:.1f} s "
            f"to {host} (htpasswd); config.json: credHelpers only; the password in none of "
            f"{searched} files of /root /work /tmp")


def check_docker_refused_with_a_wrong_secret_or_none():
    box(BUILD_IMAGE, 300)
    with registry() as (host, storage):
        image = f"{host}/boxtest/busybox:{secrets.token_hex(4)}"
        set_secrets(REGISTRY_PASSWORD=REG_WRONG)
        try:
            put_credential("registry", host, REG_USER, "REGISTRY_PASSWORD")
            box(f"docker tag {IMAGE} {image}")
            wrong = run(f"docker push {image}", 300)
            said = (wrong["stdout"] + wrong["stderr"]).lower()
            assert wrong["exitCode"] != 0 and "unauthorized" in said, wrong
            set_secrets(REGISTRY_PASSWORD=REG_PASSWORD)  # rotated: the next push uses it
            box(f"docker push {image}", 300)
            box(f"docker rmi {image}")
            table = api("DELETE", f"/v1/credentials/registry/{host}")
            assert table["registries"] == [], table
            _, config = docker_config()
            assert host not in config.get("credHelpers", {}), config
            none = run(f"docker pull {image}", 300)
            said = none["stdout"] + none["stderr"]
            assert none["exitCode"] != 0 and "no basic auth credentials" in said, none
        finally:
            drop_credential("registry", host)
            set_secrets()
            run(f"docker rmi {image}", 120)
    return (f"wrong secret: {last_line(wrong)}; rotated: pushed; "
            f"none: {last_line(none).rsplit(': ', 1)[-1]}")


# ---- AWS ----

PROBE = """import botocore.session
s = botocore.session.Session()
print(s.get_credentials().method, s.get_config_variable('region'))
"""


def check_aws_role_reaches_commands_and_botocore():
    since_start()
    path = "/run/boxd/aws-web-identity-token"
    try:
        table = api("PUT", "/v1/credentials/aws",
                    {"roleArn": ARN, "webIdentityToken": AWS_TOKEN, "region": "eu-west-1"})
        assert table["aws"] == {"roleArn": ARN, "region": "eu-west-1", "tokenFile": path}, table
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, oct(os.stat(path).st_mode)
        seen = box('echo "$AWS_ROLE_ARN $AWS_REGION $AWS_DEFAULT_REGION $AWS_WEB_IDENTITY_TOKEN_FILE";'
                   ' cat "$AWS_WEB_IDENTITY_TOKEN_FILE"')
        assert seen["stdout"] == f"{ARN} eu-west-1 eu-west-1 {path}\n****", seen
        # botocore picks web identity from that environment, without calling AWS
        # (no network here: its credentials are fetched when first used).
        probe = box("/usr/bin/python3 -", stdin=PROBE)
        assert probe["stdout"] == "assume-role-with-web-identity eu-west-1\n", probe
    finally:
        api("DELETE", "/v1/credentials/aws", expect=None)
    assert not os.path.exists(path), f"{path} left after DELETE"
    gone = box('echo "${AWS_ROLE_ARN-unset} ${AWS_WEB_IDENTITY_TOKEN_FILE-unset}"')
    assert gone["stdout"] == "unset unset\n", gone
    return (f"env and token file (0600, read back as ****) in a later command, botocore: "
            f"{probe['stdout'].split()[0]}; gone after DELETE")


# ---- afterwards ----

def check_no_file_in_the_box_holds_a_value():
    """Every file of the box changed since the first check above, wherever
    it is (/proc, /sys and /dev are not files), searched for every value
    set here and for the basic-auth headers made of them."""
    start = time.monotonic()
    tops = [f"/{name}" for name in sorted(os.listdir("/"))
            if name not in ("proc", "sys", "dev") and not os.path.islink(f"/{name}")]
    # A value of no credential, planted: the search must find it, or it
    # would find no leak either.
    canary, planted = "canary-" + secrets.token_hex(16), "/tmp/boxtest-credentials.canary"
    with open(planted, "w") as f:
        f.write(canary)
    try:
        found, searched = files_holding(VALUES + [canary], *tops, newer=since_start())
    finally:
        os.unlink(planted)
        os.unlink(STAMP)
    took = time.monotonic() - start
    figure("credentials-search-s", f"{took:.1f}")
    assert planted in found, f"the search missed {planted}: {found}"
    leaks = [name for name in found if name != planted]
    assert not leaks, f"files holding a value: {leaks}"
    # Nothing left for later areas: no credential, no secret (70_trust counts them).
    table = api("GET", "/v1/credentials")
    assert table == {"git": [], "registries": [], "aws": None}, table
    assert health()["secrets"]["count"] == 0, health()["secrets"]
    return (f"none of {searched} files changed under / since the first check holds a value "
            f"(a planted one was found), searched in {took:.0f} s")
