"""PUT /v1/lock, the 423 rule, GET /v1/steps and the X-Request-Id memory."""
import threading


def test_lock_round_trip_shows_in_health_and_steps(boxd):
    status, body = boxd.call("PUT", "/v1/lock", {"locked": True, "note": "logging in"})
    assert status == 200
    assert body["locked"] is True and body["note"] == "logging in" and body["since"] > 0
    assert boxd.call("GET", "/v1/health")[1]["locked"] is True
    assert boxd.call("GET", "/v1/lock")[1]["locked"] is True
    status, body = boxd.call("PUT", "/v1/lock", {"locked": False})
    assert status == 200 and body["locked"] is False and body["since"] is None, body
    assert body["heldMs"] >= 0 and "changes" in body, body
    steps = boxd.call("GET", "/v1/steps")[1]["steps"]
    assert [s["kind"] for s in steps] == ["lock", "lock"]
    assert "logging in" in steps[0]["summary"]
    assert "handed back" in steps[1]["summary"]
    assert steps[0]["at"] <= steps[1]["at"]


def test_reads_still_work_while_locked(boxd):
    boxd.call("PUT", "/v1/lock", {"locked": True})
    for path in ["/v1/health", "/v1/steps", "/v1/lock"]:
        assert boxd.request("GET", path).status == 200


def test_steps_keep_the_last_30(boxd):
    for i in range(40):
        boxd.call("PUT", "/v1/lock", {"locked": i % 2 == 0, "note": f"n{i}"})
    steps = boxd.call("GET", "/v1/steps")[1]["steps"]
    assert len(steps) == 30
    assert "n38" in steps[-2]["summary"]


def test_request_id_replays_the_first_answer(boxd):
    headers = {"X-Request-Id": "retry-1"}
    first = boxd.request("PUT", "/v1/env/api", b"REGION=eu-1\n", headers)
    boxd.request("PUT", "/v1/env/api", b"REGION=us-2\n")
    again = boxd.request("PUT", "/v1/env/api", b"REGION=eu-1\n", headers)
    assert again.status == first.status == 200
    assert again.body == first.body
    # Replayed, not run again: the file holds the second call's value.
    env = open(f"{boxd.work_dir}/.sbx/env/api.env").read()
    assert "us-2" in env, env
    assert again.headers["x-request-id"] == "retry-1"
    # The repeat did not run: the lock stays released.
    assert boxd.call("GET", "/v1/lock")[1]["locked"] is False
    assert len(boxd.call("GET", "/v1/steps")[1]["steps"]) == 2


def test_request_id_on_another_call_is_a_conflict(boxd):
    headers = {"X-Request-Id": "same"}
    assert boxd.request("PUT", "/v1/lock", {"locked": True}, headers).status == 200
    response = boxd.request("PUT", "/v1/lock?x=1", {"locked": True}, headers)
    assert response.status == 409
    assert response.json()["error"]["code"] == "conflict"


def test_malformed_request_ids_are_refused(boxd):
    for bad in ["", "a" * 65, "has space", "semi;colon", "ünïcode"]:
        response = boxd.request("PUT", "/v1/lock", {"locked": True},
                                {"X-Request-Id": bad.encode().decode("latin-1")})
        assert response.status == 400, bad
    assert boxd.call("GET", "/v1/lock")[1]["locked"] is False


def test_at_least_256_ids_are_remembered(boxd):
    for i in range(300):
        assert boxd.request("PUT", "/v1/lock", {"locked": i % 2 == 0},
                            {"X-Request-Id": f"id-{i}"}).status == 200
    # id-44 is among the last 256: replayed, so the state does not change.
    state = boxd.call("GET", "/v1/lock")[1]["locked"]
    boxd.request("PUT", "/v1/lock", {"locked": True}, {"X-Request-Id": "id-45"})
    assert boxd.call("GET", "/v1/lock")[1]["locked"] == state


def test_concurrent_repeats_run_once(boxd):
    answers = []

    def put():
        answers.append(boxd.request("PUT", "/v1/lock", {"locked": True, "note": "once"},
                                    {"X-Request-Id": "burst"}).body)

    threads = [threading.Thread(target=put) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # One call ran: its answer alone carries the takeover token (answered
    # once, tests/integration/test_callers.py); every repeat got the lock
    # as that call left it.
    with_token = [a for a in answers if b'"token"' in a]
    assert len(with_token) == 1, answers
    assert len(set(answers) - set(with_token)) == 1, answers
    assert len(boxd.call("GET", "/v1/steps")[1]["steps"]) == 1
