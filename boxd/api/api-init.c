/* api-init.c: POST /v1/init, from the control plane at claim and after
 * every thaw or restore (init.h). */
#include "router.h"
#include "freeze.h"
#include "init.h"

static void handle_init(struct api_request *req)
{
	cJSON *body = api_body_json(req);
	if (!body)
		return;
	struct init_outcome outcome;
	char error[512];
	if (!init_apply(body, &outcome, error, sizeof error)) {
		/* Other failures stay 400, as docs/init.md has it (a hosts file
		 * that is a bind mount cannot be renamed over). */
		if (api_disk_full(outcome.system_error))
			api_reply_failure(req, FAILURE_DISK_FULL, "%s (free space there and retry)",
					  error);
		else if (/* the kernel refused the entropy: boxd's part failed */
			 outcome.system_error && outcome.entropy == NULL &&
			 cJSON_GetObjectItemCaseSensitive(body, "entropy"))
			api_reply_failure(req, FAILURE_INTERNAL, "%s", error);
		else
			api_reply_bad_request(req, "%s", error);
		return;
	}
	/* An init comes after a thaw or a restore: the box runs again, and a
	 * freeze left in force (the host's thaw call lost) ends here. */
	cJSON *undone = freeze_undo("init");
	cJSON *answer = cJSON_CreateObject();
	cJSON_AddBoolToObject(answer, "applied", outcome.applied);
	cJSON_AddBoolToObject(answer, "thawed",
			      cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(undone, "thawed")));
	cJSON_Delete(undone);
	cJSON_AddBoolToObject(answer, "clockSet", outcome.clock_set);
	if (outcome.entropy)
		cJSON_AddStringToObject(answer, "entropy", outcome.entropy);
	cJSON_AddStringToObject(answer, "instanceId", init_instance_id());
	api_reply_json(req, 200, answer);
}

const struct api_route api_init_routes[] = {
	{"POST", "/v1/init", API_IDEMPOTENT | API_FOR_CONTROL | API_SERVED_FROZEN, 0, handle_init},
	{0},
};
