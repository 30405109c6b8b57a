/* api-lock.c: PUT /v1/lock, GET /v1/lock (a person has the screen). */
#include <string.h>

#include "router.h"
#include "handback.h"
#include "lock.h"
#include "log.h"
#include "steps.h"

#define NOTE_MAX 2000

static void take(struct api_request *req, const char *note)
{
	lock_set(true, note);
	handback_begin(false);
	log_msg(LOG_LEVEL_INFO, "locked: a person has the screen");
	cJSON *reply = lock_to_json();
	/* A repeat of this call's X-Request-Id gets the lock without its
	 * token: the token is answered once, never kept. */
	api_keep_instead(req, lock_to_json());
	cJSON_AddStringToObject(reply, "token", lock_token());
	api_reply_json(req, 200, reply);
}

/* The hand-back: the lock ends once what the person did is known. */
static void handed_back(void *arg, int64_t held_ms, cJSON *changes)
{
	struct api_request *req = arg;
	lock_set(false, NULL);
	log_msg(LOG_LEVEL_INFO, "unlocked after %lld ms", (long long)held_ms);
	cJSON *reply = lock_to_json();
	cJSON_AddNumberToObject(reply, "heldMs", (double)held_ms);
	cJSON_AddItemToObject(reply, "changes", changes);
	api_reply_json(req, 200, reply);
}

static void handle_put_lock(struct api_request *req)
{
	cJSON *body = api_body_json(req);
	if (!body)
		return;
	cJSON *locked = cJSON_GetObjectItemCaseSensitive(body, "locked");
	cJSON *note = cJSON_GetObjectItemCaseSensitive(body, "note");
	if (!cJSON_IsBool(locked)) {
		api_reply_bad_request(req, "`locked` must be true or false");
		return;
	}
	if (note && !cJSON_IsNull(note) && !cJSON_IsString(note)) {
		api_reply_bad_request(req, "`note` must be a string");
		return;
	}
	const char *text = cJSON_GetStringValue(note);
	if (text && strlen(text) > NOTE_MAX) {
		api_reply_bad_request(req, "`note` is longer than %d bytes", NOTE_MAX);
		return;
	}
	bool now_locked = cJSON_IsTrue(locked);
	if (now_locked && lock_is_locked()) {
		/* One takeover at a time, and its token goes to the call that
		 * locked, once: a second caller must not think it has the screen. */
		api_reply_failure(
			req, FAILURE_CONFLICT,
			"the screen is already locked (since %lld ms after "
			"the epoch); hand it back with {\"locked\": false} before taking it again",
			(long long)lock_since());
		return;
	}
	if (now_locked && !lock_is_locked()) {
		steps_add("lock", "a person took the screen%s%s", text ? ": " : "",
			  text ? text : "");
		take(req, text);
	} else if (!now_locked && lock_is_locked()) {
		/* Asked before the lock ends, so what is marked is still there. */
		if (handback_end(handed_back, req))
			steps_add("lock", "the screen was handed back%s%s", text ? ": " : "",
				  text ? text : "");
		else
			api_reply_failure(req, FAILURE_CONFLICT,
					  "the screen is being handed back already: its answer "
					  "goes to the call that asked first");
	} else
		api_reply_json(req, 200, lock_to_json());
}

static void handle_get_lock(struct api_request *req)
{
	api_reply_json(req, 200, lock_to_json());
}

const struct api_route api_lock_routes[] = {
	{"PUT", "/v1/lock", API_IDEMPOTENT | API_FOR_CONTROL, 0, handle_put_lock},
	{"GET", "/v1/lock", 0, 0, handle_get_lock},
	{0},
};
