/* api-lock.c: PUT /v1/lock, GET /v1/lock (a person has the screen). */
#include <string.h>

#include "router.h"
#include "lock.h"
#include "log.h"
#include "screen-client.h"
#include "steps.h"

#define NOTE_MAX 2000

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
	if (now_locked != lock_is_locked()) {
		lock_set(now_locked, text);
		/* A worker runs through the takeover, to see the person copy. */
		screen_client_hold(now_locked);
		steps_add("lock",
			  now_locked ? "a person took the screen%s%s"
				     : "the screen was handed back%s%s",
			  text ? ": " : "", text ? text : "");
		log_msg(LOG_LEVEL_INFO,
			now_locked ? "locked: a person has the screen" : "unlocked");
	}
	cJSON *reply = lock_to_json();
	if (lock_token()) {
		/* A repeat of this call's X-Request-Id gets the lock without its
		 * token: the token is answered once, never kept. */
		api_keep_instead(req, lock_to_json());
		cJSON_AddStringToObject(reply, "token", lock_token());
	}
	api_reply_json(req, 200, reply);
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
