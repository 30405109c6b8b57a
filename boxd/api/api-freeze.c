/* api-freeze.c: POST /v1/freeze and /v1/thaw, before and after the host
 * pauses or snapshots the box (freeze.h). */
#include "router.h"
#include "freeze.h"

/* An optional boolean field; false (answered 400) when it is not one. */
static bool flag(struct api_request *req, const cJSON *body, const char *name, bool *value)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(body, name);
	*value = cJSON_IsTrue(item);
	if (!item || cJSON_IsBool(item))
		return true;
	api_reply_bad_request(req, "%s must be true or false", name);
	return false;
}

static void frozen(void *arg, cJSON *answer, enum failure failure, const char *error)
{
	struct api_request *req = arg;
	if (answer)
		api_reply_json(req, 200, answer);
	else
		api_reply_failure(req, failure, "%s", error);
}

static void handle_freeze(struct api_request *req)
{
	cJSON *body = api_body_json(req);
	bool reclaim, commands;
	if (!body || !flag(req, body, "reclaim", &reclaim) ||
	    !flag(req, body, "freezeCommands", &commands))
		return;
	freeze_start(reclaim, commands, frozen, req);
}

static void handle_thaw(struct api_request *req)
{
	api_reply_json(req, 200, freeze_undo("thaw"));
}

/* Both act for the control plane; thaw is served while frozen, which is
 * what it is for. A second freeze while frozen answers 409 `frozen`. */
const struct api_route api_freeze_routes[] = {
	{"POST", "/v1/freeze", API_IDEMPOTENT | API_FOR_CONTROL, 0, handle_freeze},
	{"POST", "/v1/thaw", API_IDEMPOTENT | API_FOR_CONTROL | API_SERVED_FROZEN, 0, handle_thaw},
	{0},
};
