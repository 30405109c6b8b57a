"""Secrets and service settings: PUT/GET /v1/secrets, PUT /v1/env/{service},
masking in what boxd returns and writes, survival across kill -9."""
import base64
import json
import os
import random
import stat
import string
import subprocess
import urllib.parse

import pytest

from conftest import assert_error, wait_for
from exec_helpers import box, files_under, stream  # noqa: F401 (box is a fixture)

S1 = "tok-4f9a2c-SECRET-value"
S2 = "p@ss w/rd:2026+x"
S3 = "line-one-of-key\nline-two-of-key"


def put_secrets(boxd, secrets):
    return boxd.call("PUT", "/v1/secrets", {"secrets": secrets})


@pytest.fixture
def sboxd(boxd):
    """A boxd whose secrets are cleared from the kernel keyring afterwards."""
    yield boxd
    if boxd.proc and boxd.proc.poll() is None:
        put_secrets(boxd, {})


def echo_error(boxd, text):
    """The text comes back inside a 404 error message (masked there)."""
    path = "/v1/no-such/" + urllib.parse.quote(text, safe="")
    status, answer = boxd.call("GET", path)
    assert_error((status, answer), 404, "not_found")
    return answer["error"]["message"]


def test_put_and_get_names(sboxd):
    status, answer = put_secrets(sboxd, {"B_TOKEN": S1, "A_PASS": S2, "SHORT": "abc"})
    assert status == 200
    assert answer == {"names": ["A_PASS", "B_TOKEN", "SHORT"]}
    assert sboxd.call("GET", "/v1/secrets") == (200, {"names": ["A_PASS", "B_TOKEN", "SHORT"]})
    _, health = sboxd.call("GET", "/v1/health")
    assert health["secrets"]["count"] == 3
    # A PUT replaces the whole set.
    assert put_secrets(sboxd, {"ONLY": S1}) == (200, {"names": ["ONLY"]})
    _, health = sboxd.call("GET", "/v1/health")
    assert health["secrets"]["count"] == 1


def test_values_never_returned(sboxd):
    status, _ = put_secrets(sboxd, {"X": S1})
    body = sboxd.request("GET", "/v1/secrets").body
    assert S1.encode() not in body
    assert S1.encode() not in sboxd.request("GET", "/v1/health").body


@pytest.mark.parametrize("body, fragment", [
    ({"secrets": []}, "must be an object"),
    ({"secrets": {"A": 5}}, "must be a string"),
    ({"secrets": {"1A": "x"}}, "not an environment variable name"),
    ({"secrets": {"A=B": "x"}}, "not an environment variable name"),
    ({"secrets": {"": "x"}}, "not an environment variable name"),
    ({"nothing": 1}, "must be an object"),
    ({"secrets": {"BIG": "x" * (64 * 1024 + 1)}}, "longer than 65536 bytes"),
])
def test_bad_secrets_bodies(sboxd, body, fragment):
    put_secrets(sboxd, {"KEEP": S1})
    status, answer = sboxd.call("PUT", "/v1/secrets", body)
    assert_error((status, answer), 400, "bad_request")
    assert answer["error"]["code"] == "bad_request"
    assert fragment in answer["error"]["message"]
    assert sboxd.call("GET", "/v1/secrets") == (200, {"names": ["KEEP"]})


def test_too_many_and_malformed(sboxd):
    many = {"N%d" % i: "value-%08d" % i for i in range(1001)}
    status, answer = put_secrets(sboxd, many)
    assert status == 400 and "at most 1000" in answer["error"]["message"]
    big = sboxd.request("PUT", "/v1/secrets", {"secrets": {"A": "x" * (2 << 20)}})
    assert big.status == 413
    response = sboxd.request("PUT", "/v1/secrets", b"{not json",
                             headers={"Content-Type": "application/json"})
    assert response.status == 400


@pytest.mark.parametrize("form", [
    S1,                                                        # raw
    "Authorization: Basic " + base64.b64encode(("user:" + S1).encode()).decode(),
    base64.b64encode((S1 + "\n").encode()).decode(),          # echo "$S" | base64
    base64.urlsafe_b64encode(("xy" + S1).encode()).decode().rstrip("="),
    base64.b64encode(("x" + S1 + "yz").encode()).decode(),
    json.dumps({"v": S2})[1:-1],                               # JSON string escaping
    urllib.parse.quote(S2, safe=""),                           # URL-encoding
    urllib.parse.quote_plus(S2),
    "'" + S2.replace("'", "'\\''") + "'",
    S3.replace("\n", "\r\n"),                                  # multi-line, CRLF
    json.dumps(S3),
    "prefix " + S1 + S1 + " suffix",                           # adjacent values
])
def test_error_messages_mask_every_form(sboxd, form):
    put_secrets(sboxd, {"S1": S1, "S2": S2, "S3": S3})
    message = echo_error(sboxd, form)
    assert "****" in message
    for secret in (S1, S2, S3):
        assert secret not in message
    # Nothing of 8 characters or more that depends on the value alone survives.
    if "Basic " in form:
        core = base64.b64encode(("user:" + S1).encode()).decode()[8:-4]
        for k in range(len(core) - 8):
            assert core[k:k + 8] not in message


def test_short_values_are_not_masked(sboxd):
    put_secrets(sboxd, {"SHORT": "seven77", "OK": S1})
    message = echo_error(sboxd, "a seven77 b")
    assert "seven77" in message and "****" not in message


def test_env_file_written_0600_and_secret_values_masked(sboxd):
    put_secrets(sboxd, {"S1": S1})
    text = ("# settings of web\n"
            "export API_KEY='key-value-1234'\n"
            "DB_PASSWORD=\"pw with \\\"quote\\\"\"  # comment\n"
            "DATABASE_URL=postgres://app:url-secret-99@db:5432/app\n"
            "SENTRY_DSN=https://dsn-value-5678@sentry.example/1\n"
            "MY_CREDENTIAL=cred-value-0000\nPRIVATE_PEM=\"-----BEGIN\\nabcdefgh\\n-----END\"\n"
            "PORT=8080808080\nGREETING=hello-world-plain\n")
    status, answer = sboxd.call("PUT", "/v1/env/web", text)
    assert status == 200, answer
    path = os.path.join(sboxd.work_dir, ".sbx", "env", "web.env")
    assert answer["path"] == path
    assert answer["names"] == ["API_KEY", "DB_PASSWORD", "DATABASE_URL", "SENTRY_DSN",
                               "MY_CREDENTIAL", "PRIVATE_PEM", "PORT", "GREETING"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as f:
        assert f.read() == text
    for secret in ("key-value-1234", 'pw with "quote"', "url-secret-99",
                   "postgres://app:url-secret-99@db:5432/app", "cred-value-0000",
                   "-----BEGIN\nabcdefgh\n-----END"):
        assert secret not in echo_error(sboxd, "x " + secret + " y"), secret
    # Not secret-looking: left alone.
    assert "8080808080" in echo_error(sboxd, "port 8080808080")
    assert "hello-world-plain" in echo_error(sboxd, "hello-world-plain")
    # Secret names of the PUT set are untouched by env files.
    assert sboxd.call("GET", "/v1/secrets") == (200, {"names": ["S1"]})
    # Replacing the service's settings drops its old masked values.
    assert sboxd.call("PUT", "/v1/env/web", "PORT=1\n")[0] == 200
    assert "key-value-1234" in echo_error(sboxd, "key-value-1234")


@pytest.mark.parametrize("service, body, status, fragment", [
    ("web", "A=1\nB='open\n", 400, "line 2: the single quote is never closed"),
    ("web", "=x\n", 400, "line 1: expected NAME=value"),
    ("web", "A=1\0B=2", 400, "NUL"),
    ("..", "A=1", 400, "service name"),
    (".hidden", "A=1", 400, "service name"),
    ("a%2Fb", "A=1", 404, "no such endpoint"),           # the router decodes first
    ("x" * 101, "A=1", 400, "service name"),
])
def test_env_hostile_inputs(sboxd, service, body, status, fragment):
    got, answer = sboxd.call("PUT", "/v1/env/" + service, body)
    assert got == status, answer
    assert fragment in answer["error"]["message"]
    env_dir = os.path.join(sboxd.work_dir, ".sbx", "env")
    assert not os.path.exists(env_dir) or os.listdir(env_dir) == []


def test_env_with_long_values_is_written_and_boxd_lives_on(sboxd):
    """The body was wiped after the answer had freed it: a write into freed
    memory on every call, a crash (SIGSEGV) once the body was big enough
    to live in a mapping of its own (50 KB here)."""
    for size in (1000, 50_000, 200_000):
        text = "PORT=1\nBLOB=" + "y" * size + "\n"
        status, answer = sboxd.call("PUT", "/v1/env/web", text)
        assert status == 200 and answer["names"] == ["PORT", "BLOB"], answer
        with open(os.path.join(sboxd.work_dir, ".sbx", "env", "web.env")) as f:
            assert f.read() == text
    assert sboxd.proc.poll() is None
    assert sboxd.call("GET", "/v1/health")[0] == 200


def test_error_message_of_env_masks_values(sboxd):
    put_secrets(sboxd, {"S1": S1})
    status, answer = sboxd.call("PUT", "/v1/env/web", "A=1\n" + S1 + " oops\n")
    assert_error((status, answer), 400, "bad_request")
    assert S1 not in answer["error"]["message"] and "****" in answer["error"]["message"]


def test_steps_and_paths_mask_values(sboxd):
    secret = "svc-name-is-secret"
    put_secrets(sboxd, {"S": secret})
    status, answer = sboxd.call("PUT", "/v1/env/" + secret, "A=1\n")
    assert status == 200 and secret not in answer["path"]
    steps = sboxd.request("GET", "/v1/steps").body
    assert secret.encode() not in steps and b"****" in steps


def test_log_lines_are_masked(boxd_factory):
    box = boxd_factory("--log-level", "debug")
    try:
        put_secrets(box, {"S1": S1, "S2": S2})
        echo_error(box, S1)
        echo_error(box, S2)
        wait_for(lambda: "no-such" in box.log(), what="the request in the log")
        log = box.log()
        for form in (S1, S2, urllib.parse.quote(S1, safe=""), urllib.parse.quote(S2, safe="")):
            assert form not in log
        assert "****" in log
    finally:
        put_secrets(box, {})


def test_survives_kill_9(keyring_boxd):
    boxd = keyring_boxd
    put_secrets(boxd, {"S1": S1, "S3": S3})
    assert boxd.call("PUT", "/v1/env/web", "API_TOKEN=env-token-777\n")[0] == 200
    boxd.kill()
    boxd.start()
    try:
        assert boxd.call("GET", "/v1/secrets") == (200, {"names": ["S1", "S3"]})
        _, health = boxd.call("GET", "/v1/health")
        assert health["secrets"]["count"] == 2
        for secret in (S1, S3, "env-token-777"):
            message = echo_error(boxd, "a " + secret + " b")
            assert secret not in message and "****" in message
        assert "restored" in boxd.log()
    finally:
        put_secrets(boxd, {})
    # An emptied set stays empty after a restart.
    boxd.kill()
    boxd.start()
    assert boxd.call("GET", "/v1/secrets") == (200, {"names": []})


def test_instances_do_not_share_secrets(boxd_factory):
    one, two = boxd_factory(), boxd_factory()
    try:
        put_secrets(one, {"ONE": S1})
        assert two.call("GET", "/v1/secrets") == (200, {"names": []})
    finally:
        put_secrets(one, {})


def test_no_file_holds_a_value(boxd):
    secrets = {"S1": S1, "S2": S2, "S3": S3}
    put_secrets(boxd, secrets)
    boxd.call("PUT", "/v1/env/web", "PORT=1\n")
    echo_error(boxd, S1)
    boxd.kill()
    boxd.start()
    try:
        echo_error(boxd, S2)
        boxd.request("GET", "/v1/steps")
    finally:
        put_secrets(boxd, {})
    boxd.stop()
    forms = []
    for value in secrets.values():
        forms += [value.encode(), base64.b64encode(value.encode())[:-4]]
    for path, data in files_under(boxd.root):
        for form in forms:
            assert form not in data, (path, form)


def test_boxctl_secrets(sboxd):
    result = sboxd.boxctl("secrets", "set", "MY_TOKEN", "OTHER",
                          env={"MY_TOKEN": S1, "OTHER": S2})
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().split() == ["MY_TOKEN", "OTHER"]
    result = sboxd.boxctl("secrets", "ls")
    assert result.returncode == 0 and result.stdout.decode().split() == ["MY_TOKEN", "OTHER"]
    result = sboxd.boxctl("--json", "secrets", "ls")
    assert json.loads(result.stdout) == {"names": ["MY_TOKEN", "OTHER"]}
    env = dict(os.environ)
    env.pop("NOT_SET_ANYWHERE", None)
    result = sboxd.boxctl("secrets", "set", "NOT_SET_ANYWHERE")
    assert result.returncode == 2 and b"not set in the environment" in result.stderr
    assert sboxd.boxctl("secrets", "bogus").returncode == 2


# ---- forms written by real tools, masked in command output and logs ----

# A 40-byte API token: its base64 (56 characters) fits on one line, so it is
# cut in two only where the stream puts it across a line break.
TOKEN = "".join(random.Random(14).choice(string.ascii_letters + string.digits + "-_")
                for _ in range(40))
SPECIAL = "p@ss w/rd:2026+x!$`"                    # printf %q backslashes these
CONTROL = "ctl\tvalue\x01with'both\"quotes\x7f"    # printf %q writes $'...'


@pytest.fixture
def sbox(box):
    """An exec-ready boxd whose secrets are cleared afterwards."""
    put_secrets(box, {"TOKEN": TOKEN, "SPECIAL": SPECIAL, "CONTROL": CONTROL})
    yield box
    if box.proc and box.proc.poll() is None:
        put_secrets(box, {})


def masked_stream(data, start, length, encode, width, eol):
    """What `encode(data) | fold -w width` (lines ended by eol) must become:
    the characters of the value's encoding, on however many lines, one
    "****"; data[start:start+length] is the value."""
    enc, first, last = encode(data, start, length)
    text, where = "", []
    for i, ch in enumerate(enc):
        if i and width and i % width == 0:
            text += eol
        where.append(len(text))
        text += ch
    text += eol
    return text[:where[first]] + "****" + text[where[last - 1] + 1:]


def b64(data, start, length):
    return (base64.b64encode(data).decode(), (start * 8 + 5) // 6, (start + length) * 8 // 6)


def hexlower(data, start, length):
    return data.hex(), 2 * start, 2 * (start + length)


def exec_masked(box, script):
    """Runs script; returns its stdout, after checking the log says the same."""
    status, body = box.call("POST", "/v1/exec", {"cmd": script}, timeout=120)
    assert status == 200, body
    assert body["exitCode"] == 0, body
    with open(body["logPath"], newline="") as f:
        assert f.read() == body["stdout"] + body["stderr"]
    return body["stdout"]


@pytest.mark.parametrize("tool, width, eol", [
    ("base64", 76, "\n"),
    ("base64 -w64", 64, "\n"),
    ("base64 | sed 's/$/\\r/'", 76, "\r\n"),
    ("openssl base64", 64, "\n"),
])
def test_wrapped_base64_is_masked_at_every_column(sbox, tool, width, eol):
    # The token after n bytes: every alignment and every column a line
    # break can fall on, so every way the token's base64 is cut in two.
    per_line = width // 4 * 3
    script = ('for n in $(seq 0 %d); do printf "== %%s%s" $n; '
              '{ head -c $n /dev/zero | tr "\\0" x; printf %%s "$TOKEN"; } | %s; done'
              % (per_line - 1, eol.replace("\r", "\\r").replace("\n", "\\n"), tool))
    out = exec_masked(sbox, script)
    want = "".join("== %d%s" % (n, eol) +
                   masked_stream(b"x" * n + TOKEN.encode(), n, len(TOKEN), b64, width, eol)
                   for n in range(per_line))
    assert out == want
    assert TOKEN not in out


@pytest.mark.parametrize("tool, upper", [("xxd -p", False), ("xxd -p | tr a-f A-F", True)])
def test_wrapped_hex_is_masked_at_every_column(sbox, tool, upper):
    script = ('for n in $(seq 0 29); do echo "== $n"; '
              '{ head -c $n /dev/zero | tr "\\0" x; printf %%s "$TOKEN"; } | %s; done' % tool)
    out = exec_masked(sbox, script)
    want = "".join("== %d\n" % n +
                   masked_stream(b"x" * n + TOKEN.encode(), n, len(TOKEN), hexlower, 60, "\n")
                   for n in range(30))
    assert out == (want.upper() if upper else want)
    assert TOKEN not in out


def test_escaped_and_hex_forms_are_masked(sbox):
    script = r'''
printf '%q\n' "$SPECIAL" "$CONTROL"
echo "v=${TOKEN@Q}"
/usr/bin/python3 -c 'import os
for name in ("SPECIAL", "CONTROL", "TOKEN"):
    v = os.environ[name]
    print(repr(v), repr(v.encode()), v.encode().hex(), v.encode().hex().upper())'
printf %s "$CONTROL" | od -An -tx1 -v | tr -d ' \n' | sed 's/../\\x&/g'; echo
printf %s "$SPECIAL" | od -An -to1 -v | tr -d ' \n' | sed 's/.../\\&/g'; echo
'''
    out = exec_masked(sbox, script)
    # What the same tools write here, unmasked, so the test knows the forms.
    shown = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                           env={"PATH": os.environ["PATH"], "LC_ALL": "C", "TOKEN": TOKEN,
                                "SPECIAL": SPECIAL, "CONTROL": CONTROL}).stdout
    assert "\\ " in shown and "$'" in shown and "\\x01" in shown
    assert out.splitlines() == [
        "****", "$'****'", "v='****'",
        "'****' b'****' **** ****", "'****' b'****' **** ****", "'****' b'****' **** ****",
        "****", "****"]


def test_proc_note_cwd_and_request_id_are_masked(sbox):
    cwd = os.path.join(sbox.work_dir, "dir-" + TOKEN)
    os.makedirs(cwd)
    status, body = sbox.call("POST", "/v1/exec",
                             {"cmd": "sleep 30", "background": True, "cwd": cwd,
                              "note": "deploy with " + TOKEN},
                             headers={"X-Request-Id": TOKEN})
    assert status == 200, body
    bg_id = body["bgId"]
    for path in ("/v1/procs", "/v1/procs/" + bg_id, "/v1/steps", "/v1/health"):
        response = sbox.request("GET", path)
        assert response.status == 200, (path, response.body)
        assert TOKEN.encode() not in response.body, path
    proc = sbox.call("GET", "/v1/procs/" + bg_id)[1]
    assert proc["note"] == "deploy with ****"
    assert proc["cwd"] == os.path.join(sbox.work_dir, "dir-****")
    listed = sbox.boxctl("--json", "procs")
    assert listed.returncode == 0 and TOKEN.encode() not in listed.stdout
    assert b"deploy with ****" in listed.stdout
    # The echoed X-Request-Id, first answer and replay.
    for _ in range(2):
        response = sbox.request("POST", "/v1/exec", {"cmd": "true"},
                                headers={"X-Request-Id": TOKEN})
        assert response.status == 200, response.body
        assert response.headers["x-request-id"] == "****"
    # The command's state files do not hold the cwd either.
    for path, data in files_under(sbox.run_dir):
        assert TOKEN.encode() not in data, path
    sbox.call("POST", "/v1/procs/%s/stop" % bg_id)


def test_streamed_events_are_masked(sbox):
    events = stream(sbox, {"cmd": 'printf %s "$TOKEN" | base64 -w 20; printf "%q" "$SPECIAL"',
                           "note": TOKEN})
    text = "".join(e.get("data", "") for e in events)
    assert TOKEN not in json.dumps(events)
    joined = base64.b64encode(TOKEN.encode()).decode()
    assert text.startswith("****") and joined[:8] not in text
