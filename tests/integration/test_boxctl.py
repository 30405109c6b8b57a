"""boxctl: human output, --json, exit statuses, socket selection."""
import json
import os
import subprocess

from conftest import BOXCTL, REPO


def test_health_human_and_json(boxd):
    out = boxd.boxctl("health")
    assert out.returncode == 0
    text = out.stdout.decode()
    assert "boxd 0.1.0" in text and "display   :65000 down" in text and "locked    no" in text
    out = boxd.boxctl("--json", "health")
    assert out.returncode == 0 and json.loads(out.stdout)["ok"] is True
    out = boxd.boxctl("health", "--json")
    assert json.loads(out.stdout)["ok"] is True


def test_lock_unlock_and_steps(boxd):
    assert boxd.boxctl("lock", "--note", "taking over").returncode == 0
    assert boxd.call("GET", "/v1/lock")[1]["note"] == "taking over"
    assert boxd.boxctl("unlock").returncode == 0
    out = boxd.boxctl("steps")
    assert out.returncode == 0
    lines = out.stdout.decode().splitlines()
    assert len(lines) == 2 and "lock" in lines[0] and "taking over" in lines[0]


def test_usage_errors_exit_2(boxd):
    assert boxd.boxctl().returncode == 2
    out = boxd.boxctl("frobnicate")
    assert out.returncode == 2 and b"unknown command" in out.stderr
    assert boxd.boxctl("health", "extra").returncode == 2
    assert boxd.boxctl("lock", "--bogus").returncode == 2


def test_no_boxd_is_exit_1_with_a_hint(tmp_path):
    out = subprocess.run([BOXCTL, "--socket", str(tmp_path / "none.sock"), "health"],
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert "is boxd running?" in out.stderr


def test_socket_flag_beats_the_environment(boxd, tmp_path):
    out = subprocess.run([BOXCTL, "--socket", boxd.socket, "health"], capture_output=True,
                         env={"BOXD_SOCKET": str(tmp_path / "wrong.sock")})
    assert out.returncode == 0


COMMANDS = ["health", "freeze", "thaw", "exec", "shell", "attach", "procs", "secrets", "env", "credentials", "shot", "input",
            "record", "live", "clipboard", "windows", "sync", "get", "files", "changes", "steps", "lock", "unlock", "ports", "services"]


def test_help_is_tidy_and_lists_every_command(boxd):
    out = boxd.boxctl("--help")
    assert out.returncode == 0
    text = out.stdout.decode()
    lines = text.split("commands:\n", 1)[1].splitlines()
    for line in lines:
        assert len(line) <= 80, line
        assert line.startswith("  "), line
        if line[2] == " ":
            # A continuation: a description at column 30, or the rest of
            # a synopsis under its command word.
            assert line[:30].strip() == "" and line[30] != " " or line[:7] == " " * 7, line
        else:
            head, _, description = line.partition("   ")
            if description.strip():
                assert line.index(description.strip()) == 30, line
    listed = [line.split()[0] for line in lines if line[2] != " "]
    assert sorted(set(listed)) == sorted(COMMANDS)
    for verb in ["procs rm ID", "exec --show ID", "env set SERVICE", "credentials git HOST USER SECRET",
                 "credentials aws ROLE_ARN REGION --token-file FILE|-", "lock status", "windows focus ID",
                 "freeze [--reclaim] [--commands]"]:
        assert verb in text, verb


def test_exec_passes_stdin(boxd):
    out = boxd.boxctl("exec", "--", "cat", input=b"hi")
    assert out.returncode == 0 and out.stdout == b"hi", out
    out = boxd.boxctl("exec", "--", "wc -l", input=b"a\nb\nc\n")
    assert out.stdout.strip() == b"3"
    out = boxd.boxctl("exec", "--json", "--", "tr a-z A-Z", input=b"loud")
    assert json.loads(out.stdout)["stdout"] == "LOUD"
    # -n: none, as from /dev/null; and a NUL cannot travel as text.
    out = boxd.boxctl("exec", "-n", "--", "cat; echo end", input=b"ignored")
    assert out.stdout == b"end\n"
    out = boxd.boxctl("exec", "--", "cat", input=b"a\0b")
    assert out.returncode == 2 and b"NUL" in out.stderr


def test_exec_show(boxd):
    out = boxd.boxctl("--json", "exec", "--", "echo out; echo err >&2; exit 3")
    command_id = json.loads(out.stdout)["id"]
    out = boxd.boxctl("exec", "--show", command_id)
    assert out.returncode == 3 and out.stdout == b"out\n" and out.stderr == b"err\n", out
    assert json.loads(boxd.boxctl("exec", "--show", command_id, "--json").stdout)["exitCode"] == 3
    out = boxd.boxctl("exec", "--show", "c_nonesuch")
    assert out.returncode == 1 and b"not_found" in out.stderr


def test_procs_rm(boxd):
    out = boxd.boxctl("exec", "--bg", "--", "sleep 30")
    sleeper = out.stdout.split()[0].decode()
    out = boxd.boxctl("procs", "rm", sleeper)
    assert out.returncode == 1 and b"conflict" in out.stderr      # still running
    assert boxd.boxctl("procs", "stop", sleeper).returncode == 0
    out = boxd.boxctl("procs", "rm", sleeper)
    assert out.returncode == 0 and sleeper in out.stdout.decode()
    assert boxd.call("GET", f"/v1/procs/{sleeper}")[0] == 404
    assert sleeper not in boxd.boxctl("procs").stdout.decode()


def test_env_set_from_stdin_and_file(boxd, tmp_path):
    out = boxd.boxctl("env", "set", "api", input=b"PORT=3000\nAPI_TOKEN=abcdefgh12345\n")
    assert out.returncode == 0, out
    path = os.path.join(boxd.work_dir, ".sbx", "env", "api.env")
    assert out.stdout.decode() == f"wrote {path}: PORT API_TOKEN\n"
    assert open(path).read().splitlines() == ["PORT=3000", "API_TOKEN=abcdefgh12345"]
    settings = tmp_path / "web.env"
    settings.write_text("HOST=0.0.0.0\n")
    out = boxd.boxctl("env", "set", "web", str(settings))
    assert out.returncode == 0 and json.loads(
        boxd.boxctl("--json", "env", "set", "web", str(settings)).stdout)["names"] == ["HOST"]
    # The token is masked from now on: it joined the secrets.
    out = boxd.boxctl("exec", "--", "echo abcdefgh12345")
    assert b"abcdefgh12345" not in out.stdout and b"****" in out.stdout
    assert boxd.boxctl("env", "set").returncode == 2
    assert boxd.boxctl("env", "set", "x", str(tmp_path / "missing")).returncode == 2


def test_lock_prints_text_and_status(boxd):
    out = boxd.boxctl("lock", "--note", "fixing the login")
    lines = out.stdout.decode().splitlines()
    assert out.returncode == 0 and lines[0].startswith("locked since ") and \
        lines[0].endswith(": fixing the login") and "boxctl unlock" in lines[2]
    # The takeover token, for the person's own input while locked.
    token = boxd.call("GET", "/v1/lock")[1].get("token")
    assert token is None and lines[1].startswith("takeover token: ") and len(lines[1].split()[2]) == 32
    assert not out.stdout.lstrip().startswith(b"{")
    status = boxd.boxctl("lock", "status").stdout.decode()
    assert status.startswith("locked since ") and "fixing the login" in status
    assert json.loads(boxd.boxctl("--json", "lock", "status").stdout)["locked"] is True
    assert boxd.boxctl("unlock").stdout == b"unlocked\n"
    assert boxd.boxctl("lock", "status").stdout == b"unlocked\n"


COMPLETION = os.path.join(REPO, "boxd", "ctl", "boxctl.bash-completion")


def complete(boxd, line):
    """What bash would offer for `line` (completing its last word)."""
    words = line.split(" ")
    script = (f"source {COMPLETION}\n"
              f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
              f"COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}\n"
              "_boxctl; printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    env = dict(os.environ, BOXD_SOCKET=boxd.socket,
               PATH=os.path.dirname(BOXCTL) + os.pathsep + os.environ["PATH"])
    out = subprocess.run(["bash", "--norc", "--noprofile"], input=script.encode(),
                         capture_output=True, env=env, timeout=30)
    assert out.returncode == 0, out.stderr
    return sorted(w for w in out.stdout.decode().splitlines() if w)


def test_bash_completion(boxd):
    assert complete(boxd, "boxctl ") == sorted(COMMANDS)
    assert complete(boxd, "boxctl pr") == ["procs"]
    assert complete(boxd, "boxctl procs ") == ["log", "ls", "rm", "show", "stop", "wait"]
    assert complete(boxd, "boxctl --json lo") == ["lock"]
    assert complete(boxd, "boxctl exec --s") == ["--show"]
    assert complete(boxd, "boxctl record ") == ["start", "status", "stop"]
    assert complete(boxd, "boxctl windows ") == ["--json", "focus"]
    assert complete(boxd, "boxctl clipboard ") == ["get", "set"]
    assert complete(boxd, "boxctl clipboard set --") == ["--file", "--primary"]
    assert complete(boxd, "boxctl clipboard get --") == ["--output", "--primary"]
    assert complete(boxd, "boxctl freeze --") == ["--commands", "--reclaim"]
    assert complete(boxd, "boxctl shell --") == ["--", "--cwd", "--env", "--user"]
    assert complete(boxd, "boxctl credentials ") == ["aws", "git", "ls", "registry", "rm"]
    assert complete(boxd, "boxctl credentials rm ") == ["aws", "git", "registry"]
    assert complete(boxd, "boxctl credentials aws arn us-east-1 ") == ["--token-file"]
    boxd.call("PUT", "/v1/secrets", {"secrets": {"GIT_TOKEN": "completion-token-1"}})
    assert complete(boxd, "boxctl credentials git github.com u ") == ["GIT_TOKEN"]
    boxd.boxctl("credentials", "git", "github.com", "u", "GIT_TOKEN")
    assert complete(boxd, "boxctl credentials rm git ") == ["github.com"]
    boxd.call("PUT", "/v1/secrets", {"secrets": {}})
    sleeper = boxd.boxctl("exec", "--bg", "--", "sleep 30").stdout.split()[0].decode()
    assert complete(boxd, "boxctl procs stop ") == [sleeper]
    assert complete(boxd, "boxctl procs stop b_") == [sleeper]
    assert complete(boxd, "boxctl attach ") == [sleeper]
    boxd.boxctl("procs", "stop", sleeper)



def test_credentials(boxd, tmp_path):
    boxd.call("PUT", "/v1/secrets", {"secrets": {"GIT_TOKEN": "ctl-token-value-1",
                                                 "REG_PASSWORD": "ctl-token-value-2"}})
    try:
        out = boxd.boxctl("credentials", "git", "github.com", "x-access-token", "GIT_TOKEN")
        assert out.returncode == 0, out
        assert b"github.com" in out.stdout and b"GIT_TOKEN" in out.stdout
        assert boxd.boxctl("credentials", "registry", "registry.example:5000", "u",
                           "REG_PASSWORD").returncode == 0
        token = tmp_path / "token"
        token.write_text("eyJhbGciOiJSUzI1NiJ9.ctl-token\n")
        out = boxd.boxctl("credentials", "aws", "arn:aws:iam::1:role/r", "us-east-1",
                          "--token-file", str(token))
        assert out.returncode == 0, out
        with open(os.path.join(boxd.run_dir, "aws-web-identity-token")) as f:
            assert f.read() == "eyJhbGciOiJSUzI1NiJ9.ctl-token"
        out = boxd.boxctl("credentials", "aws", "arn:aws:iam::1:role/r", "us-west-2",
                          "--token-file", "-", input=b"eyJhbGciOiJSUzI1NiJ9.from-stdin")
        assert out.returncode == 0, out
        listed = boxd.boxctl("credentials").stdout.decode().splitlines()
        assert [line.split()[:4] for line in listed] == [
            ["git", "github.com", "x-access-token", "GIT_TOKEN"],
            ["registry", "registry.example:5000", "u", "REG_PASSWORD"],
            ["aws", "arn:aws:iam::1:role/r", "us-west-2",
             os.path.join(boxd.run_dir, "aws-web-identity-token")]]
        assert b"ctl-token" not in boxd.boxctl("--json", "credentials", "ls").stdout
        # Errors: an unknown secret (the API's sentence), usage.
        out = boxd.boxctl("credentials", "git", "gitlab.com", "u", "NOPE")
        assert out.returncode == 1 and b"NOPE" in out.stderr, out
        assert boxd.boxctl("credentials", "aws", "arn:aws:iam::1:role/r", "us-east-1",
                           "the-token").returncode == 2
        assert boxd.boxctl("credentials", "git", "github.com").returncode == 2
        assert boxd.boxctl("credentials", "rm", "git", "github.com").returncode == 0
        assert boxd.boxctl("credentials", "rm", "registry", "registry.example:5000").returncode == 0
        assert boxd.boxctl("credentials", "rm", "aws").returncode == 0
        assert boxd.boxctl("credentials", "rm", "aws").returncode == 1
        assert boxd.boxctl("credentials").stdout == b""
    finally:
        boxd.call("PUT", "/v1/secrets", {"secrets": {}})
