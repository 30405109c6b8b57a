"""Credentials the box's tools pick up: PUT/DELETE/GET /v1/credentials/...,
real git against a private repository over HTTP with basic auth through
git-credential-boxd, docker-credential-boxd driven with Docker's protocol,
the AWS role's environment and token file (read by botocore), and bad
input. A real registry is the booted box's to test (docker is not on the
host)."""
import json
import os
import secrets
import stat
import subprocess
import threading

import pytest

from conftest import BUILD_DIR, assert_error
from exec_helpers import files_under
from githttp import GitHttp

GIT_HELPER = os.path.join(BUILD_DIR, "boxd", "credhelpers", "git-credential-boxd")
DOCKER_HELPER = os.path.join(BUILD_DIR, "boxd", "credhelpers", "docker-credential-boxd")
# Drawn at each run, so no file can hold them but by a leak (this file's
# text, a shell's history of it, do not).
TOKEN = "ghp_" + secrets.token_hex(16)
TOKEN2 = "ghp_" + secrets.token_hex(16)
USER = "x-access-token"


@pytest.fixture
def cboxd(boxd_factory, tmp_path):
    """A boxd whose Docker config is a temporary one (DOCKER_CONFIG), its
    secrets cleared from the kernel keyring afterwards."""
    docker = tmp_path / "docker"
    instance = boxd_factory(env={"DOCKER_CONFIG": str(docker)})
    instance.docker_config = docker
    yield instance
    if instance.proc and instance.proc.poll() is None:
        instance.call("PUT", "/v1/secrets", {"secrets": {}})


def put_secrets(boxd, **secrets):
    status, answer = boxd.call("PUT", "/v1/secrets", {"secrets": secrets})
    assert status == 200, answer


@pytest.fixture
def git_env(tmp_path):
    """The system-wide git config the package writes (/etc/gitconfig's
    credential.helper), as a file of the test's that GIT_CONFIG_SYSTEM
    points git at; a HOME and a global config of the test's own."""
    home = tmp_path / "home"
    home.mkdir()
    system = tmp_path / "gitconfig"
    system.write_text(f"[credential]\n\thelper = {GIT_HELPER}\n")
    return {"GIT_CONFIG_SYSTEM": str(system), "HOME": str(home),
            "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"), "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t"}


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "repos"
    root.mkdir()
    seed = tmp_path / "seed"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(root / "private.git")],
                   check=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(seed)], check=True)
    (seed / "README").write_text("private\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    subprocess.run(["git", "-C", str(seed), "add", "README"], check=True, env=env)
    subprocess.run(["git", "-C", str(seed), "commit", "-qm", "first"], check=True, env=env)
    subprocess.run(["git", "-C", str(seed), "push", "-q", str(root / "private.git"), "main"],
                   check=True, env=env)
    subprocess.run(["git", "-C", str(root / "private.git"), "config", "http.receivepack",
                    "true"], check=True)
    serving = GitHttp(str(root), USER, TOKEN)
    serving.bare = root / "private.git"
    yield serving
    serving.close()


def run(boxd, cmd, env, cwd=None):
    body = {"cmd": cmd, "env": env, "timeoutSec": 60}
    if cwd:
        body["cwd"] = cwd
    status, answer = boxd.call("POST", "/v1/exec", body, timeout=90)
    assert status == 200, answer
    return answer


def set_git(boxd, host, secret="GIT_TOKEN", username=USER):
    return boxd.call("PUT", "/v1/credentials/git",
                     {"host": host, "username": username, "secret": secret})


def test_git_clone_fetch_push_through_the_helper(cboxd, server, git_env, tmp_path):
    put_secrets(cboxd, GIT_TOKEN=TOKEN)
    status, table = set_git(cboxd, server.host)
    assert status == 200, table
    assert table["git"] == [{"host": server.host, "username": USER, "secret": "GIT_TOKEN",
                             "secretSet": True}]
    url = server.url("private.git")
    result = run(cboxd, f"git clone -q {url} a && cat a/README", git_env)
    assert result["exitCode"] == 0, result
    assert result["stdout"] == "private\n"
    # push from one clone, fetch from another
    run(cboxd, f"git clone -q {url} b", git_env)
    result = run(cboxd, "echo more >> README && git commit -qam second && git push -q origin main",
                 git_env, cwd="a")
    assert result["exitCode"] == 0, result
    pushed = subprocess.run(["git", "-C", str(server.bare), "log", "--format=%s", "main"],
                            capture_output=True, text=True, check=True).stdout
    assert pushed.split() == ["second", "first"]
    result = run(cboxd, "git fetch -q && git log --format=%s origin/main", git_env, cwd="b")
    assert result["exitCode"] == 0 and result["stdout"].split() == ["second", "first"], result
    # The token is in no config and no file: work dir, HOME, /tmp. git is
    # asked here, not through boxd: boxd's answer would show a leaked token
    # as **** and the check could not fail.
    shown = subprocess.run("git config -l --show-origin; git remote -v", shell=True,
                           cwd=os.path.join(cboxd.work_dir, "a"), env={**os.environ, **git_env},
                           capture_output=True, text=True, check=True).stdout
    assert TOKEN not in shown and USER not in shown, shown
    assert f"origin\t{url} (fetch)" in shown
    needle = TOKEN.encode()
    for top in (cboxd.work_dir, git_env["HOME"], "/tmp"):
        for path, data in files_under(top):
            assert needle not in data, path


def test_without_the_credential_git_fails_with_its_own_error(cboxd, server, git_env):
    put_secrets(cboxd, GIT_TOKEN=TOKEN)
    result = run(cboxd, f"git clone -q {server.url('private.git')} a", git_env)
    assert result["exitCode"] == 128
    assert "terminal prompts disabled" in result["stderr"] or \
        "Authentication failed" in result["stderr"], result
    # Another host's credential is not used for this one (port included).
    other = f"127.0.0.1:{server.port + 1 if server.port < 65535 else server.port - 1}"
    assert set_git(cboxd, other)[0] == 200
    assert set_git(cboxd, "127.0.0.1")[0] == 200
    result = run(cboxd, f"git clone -q {server.url('private.git')} a", git_env)
    assert result["exitCode"] == 128, result
    # Removed: refused again.
    assert set_git(cboxd, server.host)[0] == 200
    assert run(cboxd, f"git clone -q {server.url('private.git')} b", git_env)["exitCode"] == 0
    status, table = cboxd.call("DELETE", f"/v1/credentials/git/{server.host}")
    assert status == 200 and server.host not in [g["host"] for g in table["git"]]
    assert run(cboxd, f"git clone -q {server.url('private.git')} c", git_env)["exitCode"] == 128
    assert_error(cboxd.call("DELETE", f"/v1/credentials/git/{server.host}"), 404, "not_found")


def test_rotation_takes_effect_on_the_next_call(cboxd, server, git_env):
    put_secrets(cboxd, GIT_TOKEN=TOKEN)
    assert set_git(cboxd, server.host)[0] == 200
    url = server.url("private.git")
    assert run(cboxd, f"git clone -q {url} a", git_env)["exitCode"] == 0
    server.password = TOKEN2  # the host rotated it: the old one is refused
    result = run(cboxd, "git fetch -q", git_env, cwd="a")
    assert result["exitCode"] == 128 and "Authentication failed" in result["stderr"], result
    put_secrets(cboxd, GIT_TOKEN=TOKEN2)
    assert run(cboxd, "git fetch -q", git_env, cwd="a")["exitCode"] == 0
    # A secret that is gone: the entry stays, shown as unset; git is refused.
    put_secrets(cboxd, OTHER="x" * 12)
    _, table = cboxd.call("GET", "/v1/credentials")
    assert table["git"][0]["secretSet"] is False
    assert run(cboxd, "git fetch -q", git_env, cwd="a")["exitCode"] == 128


def test_the_value_never_shows_in_answers(cboxd, server):
    put_secrets(cboxd, GIT_TOKEN=TOKEN, REG_PASSWORD=TOKEN2)
    assert set_git(cboxd, server.host)[0] == 200
    assert cboxd.call("PUT", "/v1/credentials/registry",
                      {"registry": "registry.example:5000", "username": "u",
                       "secret": "REG_PASSWORD"})[0] == 200
    for path in ("/v1/credentials", "/v1/steps", "/v1/health"):
        body = cboxd.request("GET", path).body
        assert TOKEN.encode() not in body and TOKEN2.encode() not in body, path
    # A command reading the helper's route sees the value (git must), but
    # what boxd returns of that command is masked.
    result = run(cboxd, f"printf 'protocol=http\\nhost={server.host}\\n' | {GIT_HELPER} get", {})
    assert result["exitCode"] == 0
    assert result["stdout"] == f"username={USER}\npassword=****\n"


def test_a_value_with_a_line_end_is_not_handed_to_git(cboxd):
    put_secrets(cboxd, GIT_TOKEN="first-line-of-it\nusername=evil")
    assert set_git(cboxd, "github.com")[0] == 200
    status, _ = cboxd.call("GET", "/v1/credentials/git/fill?protocol=https&host=github.com")
    assert status == 404
    got = subprocess.run([GIT_HELPER, "get"], input="protocol=https\nhost=github.com\n",
                         capture_output=True, text=True,
                         env=dict(os.environ, BOXD_SOCKET=cboxd.socket))
    assert got.returncode == 0 and got.stdout == ""
    assert "line end" in cboxd.log()


def test_commands_may_not_set_credentials(cboxd):
    put_secrets(cboxd, GIT_TOKEN=TOKEN)
    script = ("import http.client,socket,os,json\n"
              "class C(http.client.HTTPConnection):\n"
              "    def connect(self):\n"
              "        self.sock=socket.socket(socket.AF_UNIX); self.sock.connect(os.environ['BOXD_SOCKET'])\n"
              "for method, path, body in [('PUT','/v1/credentials/git',{'host':'evil.example','username':'u','secret':'GIT_TOKEN'}),"
              "('DELETE','/v1/credentials/aws',None),('PUT','/v1/credentials/registry',{'registry':'r.example','username':'u','secret':'GIT_TOKEN'})]:\n"
              "    c=C('x'); c.request(method, path, json.dumps(body) if body else None); print(c.getresponse().status)\n")
    status, result = cboxd.call("POST", "/v1/exec", {"cmd": "/usr/bin/python3 -", "stdin": script})
    assert status == 200 and result["stdout"].split() == ["403", "403", "403"], result


# ---- Docker ----

def docker_helper(boxd, action, stdin=""):
    return subprocess.run([DOCKER_HELPER, action], input=stdin, capture_output=True, text=True,
                          env=dict(os.environ, BOXD_SOCKET=boxd.socket), timeout=20)


def test_docker_helper_protocol_and_config(cboxd):
    config = cboxd.docker_config / "config.json"
    cboxd.docker_config.mkdir()
    config.write_text(json.dumps({"auths": {"other.example": {}},
                                  "credHelpers": {"gcr.io": "gcloud"}, "psFormat": "x"}))
    put_secrets(cboxd, REG_PASSWORD=TOKEN)
    status, table = cboxd.call("PUT", "/v1/credentials/registry",
                               {"registry": "registry.example:5000", "username": "u",
                                "secret": "REG_PASSWORD"})
    assert status == 200, table
    assert table["registries"] == [{"registry": "registry.example:5000", "username": "u",
                                    "secret": "REG_PASSWORD", "secretSet": True}]
    written = json.loads(config.read_text())
    assert written["credHelpers"] == {"gcr.io": "gcloud", "registry.example:5000": "boxd"}
    assert written["auths"] == {"other.example": {}} and written["psFormat"] == "x"
    assert TOKEN not in config.read_text()
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    for server in ("registry.example:5000", "https://registry.example:5000",
                   "https://registry.example:5000/v2/", "REGISTRY.example:5000\n"):
        got = docker_helper(cboxd, "get", server)
        assert got.returncode == 0, (server, got)
        assert json.loads(got.stdout) == {"ServerURL": server.strip(), "Username": "u",
                                          "Secret": TOKEN}
    for server in ("registry.example", "registry.example:5001", "other.example"):
        got = docker_helper(cboxd, "get", server)
        assert got.returncode == 1 and \
            got.stdout.strip() == "credentials not found in native keychain", got
    got = docker_helper(cboxd, "list")
    assert got.returncode == 0 and json.loads(got.stdout) == {"registry.example:5000": "u"}
    for action in ("store", "erase"):
        got = docker_helper(cboxd, action, '{"ServerURL":"registry.example:5000"}')
        assert got.returncode == 0, got
    assert docker_helper(cboxd, "get", "registry.example:5000").returncode == 0
    # Removed: the helper no longer answers and our credHelpers entry goes.
    assert cboxd.call("DELETE", "/v1/credentials/registry/registry.example:5000")[0] == 200
    assert json.loads(config.read_text())["credHelpers"] == {"gcr.io": "gcloud"}
    assert docker_helper(cboxd, "get", "registry.example:5000").returncode == 1
    # boxd not there: Docker is told, exit 1.
    cboxd.stop()
    got = docker_helper(cboxd, "get", "registry.example:5000")
    assert got.returncode == 1


def test_table_survives_a_restart(cboxd, server):
    put_secrets(cboxd, GIT_TOKEN=TOKEN)
    assert set_git(cboxd, server.host)[0] == 200
    assert cboxd.call("PUT", "/v1/credentials/aws",
                      {"roleArn": "arn:aws:iam::123456789012:role/r", "region": "eu-west-1",
                       "webIdentityToken": "eyJhbGciOiJSUzI1NiJ9.restart-token"})[0] == 200
    _, before = cboxd.call("GET", "/v1/credentials")
    cboxd.kill()
    cboxd.start()
    assert cboxd.call("GET", "/v1/credentials") == (200, before)
    result = run(cboxd, 'cat "$AWS_WEB_IDENTITY_TOKEN_FILE"', {})
    assert result["stdout"] == "****", result


# ---- AWS ----

ARN = "arn:aws:iam::1:role/r"


def put_aws(boxd, token, arn=ARN, region="us-east-1"):
    return boxd.call("PUT", "/v1/credentials/aws",
                     {"roleArn": arn, "webIdentityToken": token, "region": region})


def test_aws_environment_file_and_mask(cboxd):
    token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJib3hkIn0.signature-part"
    status, table = put_aws(cboxd, token)
    assert status == 200, table
    path = os.path.join(cboxd.run_dir, "aws-web-identity-token")
    assert table["aws"] == {"roleArn": ARN, "region": "us-east-1", "tokenFile": path}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as f:
        assert f.read() == token
    result = run(cboxd, 'echo "$AWS_ROLE_ARN $AWS_REGION $AWS_DEFAULT_REGION $AWS_WEB_IDENTITY_TOKEN_FILE";'
                 ' cat "$AWS_WEB_IDENTITY_TOKEN_FILE"', {})
    assert result["stdout"] == f"{ARN} us-east-1 us-east-1 {path}\n****", result
    for where in ("/v1/credentials", "/v1/steps"):
        assert token.encode() not in cboxd.request("GET", where).body
    # botocore, in a command, picks the web identity provider, without
    # calling AWS (its credentials are fetched lazily).
    probe = ("import botocore.session\n"
             "s = botocore.session.Session()\n"
             "c = s.get_credentials()\n"
             "print(c.method, s.get_config_variable('region'))\n")
    status, result = cboxd.call("POST", "/v1/exec", {"cmd": "/usr/bin/python3 -", "stdin": probe})
    assert status == 200 and result["exitCode"] == 0, result
    assert result["stdout"] == "assume-role-with-web-identity us-east-1\n", result
    assert cboxd.call("DELETE", "/v1/credentials/aws")[0] == 200
    assert not os.path.exists(path)
    assert run(cboxd, 'echo "${AWS_ROLE_ARN-unset}"', {})["stdout"] == "unset\n"


def test_aws_token_file_is_replaced_whole(cboxd):
    tokens = [f"tok{i:03d}-" + chr(ord("a") + i % 26) * (20 + (i * 37) % 300) for i in range(200)]
    assert put_aws(cboxd, tokens[0])[0] == 200
    path = os.path.join(cboxd.run_dir, "aws-web-identity-token")
    allowed = set(tokens)
    seen, bad, stop = set(), [], threading.Event()

    def reader():
        while not stop.is_set():
            try:
                with open(path) as f:
                    text = f.read()
            except FileNotFoundError:
                bad.append("missing")
                continue
            if text not in allowed:
                bad.append(text)
            seen.add(text)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for token in tokens[1:]:
            assert put_aws(cboxd, token)[0] == 200
    finally:
        stop.set()
        thread.join()
    assert not bad, bad[:3]
    assert len(seen) > 1


# ---- bad input ----

@pytest.mark.parametrize("body, words", [
    ({"host": "github.com", "username": "u", "secret": "NOPE_TOKEN"}, "NOPE_TOKEN"),
    ({"host": "github.com", "username": "u", "secret": "ghp_notaname-value!"}, "name"),
    ({"host": "https://github.com", "username": "u", "secret": "GIT_TOKEN"}, "host"),
    ({"host": "github.com/org", "username": "u", "secret": "GIT_TOKEN"}, "host"),
    ({"host": "git hub.com", "username": "u", "secret": "GIT_TOKEN"}, "host"),
    ({"host": "", "username": "u", "secret": "GIT_TOKEN"}, "host"),
    ({"host": "github.com:0", "username": "u", "secret": "GIT_TOKEN"}, "host"),
    ({"host": "github.com:99999", "username": "u", "secret": "GIT_TOKEN"}, "host"),
    ({"host": "github.com", "username": "u\npassword=x", "secret": "GIT_TOKEN"}, "username"),
    ({"host": "github.com", "username": "", "secret": "GIT_TOKEN"}, "username"),
    ({"host": "github.com", "secret": "GIT_TOKEN"}, "username"),
    ({"username": "u", "secret": "GIT_TOKEN"}, "host"),
    ({"host": "github.com", "username": "u"}, "secret"),
    ({"host": 5, "username": "u", "secret": "GIT_TOKEN"}, "host"),
    ({"host": "github.com", "username": "u", "secret": None}, "secret"),
    ({"host": "github.com", "username": ["u"], "secret": "GIT_TOKEN"}, "username"),
])
def test_bad_git_input(cboxd, body, words):
    put_secrets(cboxd, GIT_TOKEN=TOKEN)
    status, answer = cboxd.call("PUT", "/v1/credentials/git", body)
    assert_error((status, answer), 400, "bad_request", body)
    assert words in answer["error"]["message"], answer
    assert cboxd.call("GET", "/v1/credentials")[1]["git"] == []


@pytest.mark.parametrize("registry", ["", "https://registry.example", "registry.example/path",
                                      "reg istry.example", "registry.example:", "-x.example",
                                      "registry.example:5000/v2/", "[::1", "a" * 300])
def test_bad_registry(cboxd, registry):
    put_secrets(cboxd, REG_PASSWORD=TOKEN)
    status, answer = cboxd.call("PUT", "/v1/credentials/registry",
                                {"registry": registry, "username": "u", "secret": "REG_PASSWORD"})
    assert_error((status, answer), 400, "bad_request", registry)
    assert "registry" in answer["error"]["message"]
    assert not cboxd.docker_config.exists()


@pytest.mark.parametrize("arn, region, token", [
    ("arn:aws:iam::1:user/r", "us-east-1", "tok"),
    ("arn:aws:s3::1:role/r", "us-east-1", "tok"),
    ("arn:aws:iam::abc:role/r", "us-east-1", "tok"),
    ("arn:aws:iam::1:role/", "us-east-1", "tok"),
    ("arn:aws:iam::1:role/r r", "us-east-1", "tok"),
    ("arn:azure:iam::1:role/r", "us-east-1", "tok"),
    (ARN, "US-EAST-1", "tok"),
    (ARN, "us-east", "tok"),
    (ARN, "useast1", "tok"),
    (ARN, "us-east-1; rm -rf /", "tok"),
    (ARN, "us-east-1", ""),
    (ARN, "us-east-1", "two\nlines"),
    (ARN, "us-east-1", "x" * 20001),
    (None, "us-east-1", "tok"),
    (ARN, 7, "tok"),
    (ARN, "us-east-1", {"t": 1}),
])
def test_bad_aws(cboxd, arn, region, token):
    body = {k: v for k, v in (("roleArn", arn), ("region", region),
                              ("webIdentityToken", token)) if v is not None}
    status, answer = cboxd.call("PUT", "/v1/credentials/aws", body)
    assert_error((status, answer), 400, "bad_request", body)
    assert cboxd.call("GET", "/v1/credentials")[1]["aws"] is None
    assert not os.path.exists(os.path.join(cboxd.run_dir, "aws-web-identity-token"))


def test_good_aws_partitions(cboxd):
    for arn, region in (("arn:aws-us-gov:iam::123456789012:role/path/to/Role+=,.@_-", "us-gov-west-1"),
                        ("arn:aws-cn:iam::123456789012:role/r", "cn-north-1")):
        status, answer = put_aws(cboxd, "eyJhbGciOiJSUzI1NiJ9.tok", arn, region)
        assert status == 200, answer


def test_not_json_and_helper_routes(cboxd):
    status, answer = cboxd.call("PUT", "/v1/credentials/git", "not json")
    assert_error((status, answer), 400, "bad_request")
    assert_error(cboxd.call("GET", "/v1/credentials/git/fill?host=x"), 400, "bad_request")
    assert_error(cboxd.call("GET", "/v1/credentials/git/fill?protocol=https&host=nowhere"),
                 404, "not_found")
    assert_error(cboxd.call("GET", "/v1/credentials/registry/get"), 400, "bad_request")
    assert cboxd.call("GET", "/v1/credentials/registry/list") == (200, {})
    # git-credential-boxd: store and erase accepted, other protocols ignored.
    env = dict(os.environ, BOXD_SOCKET=cboxd.socket)
    for action in ("store", "erase"):
        got = subprocess.run([GIT_HELPER, action], input="protocol=https\nhost=a\n",
                             capture_output=True, text=True, env=env)
        assert got.returncode == 0 and got.stdout == ""
    got = subprocess.run([GIT_HELPER, "get"], input="protocol=ssh\nhost=a\n",
                         capture_output=True, text=True, env=env)
    assert got.returncode == 0 and got.stdout == ""
    got = subprocess.run([GIT_HELPER, "bogus"], capture_output=True, text=True, env=env)
    assert got.returncode == 2 and "usage" in got.stderr
