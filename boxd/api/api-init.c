/* api-init.c: POST /v1/init, from the control plane at claim and after
 * every thaw or restore (init.h). */
#include "router.h"
#include "init.h"

static void handle_init(struct api_request *req)
{
	cJSON *body = api_body_json(req);
	if (!body)
		return;
	bool applied, clock_set;
	int system_error;
	char error[512];
	if (!init_apply(body, &applied, &clock_set, &system_error, error, sizeof error)) {
		/* Other failures stay 400, as docs/init.md has it (a hosts file
		 * that is a bind mount cannot be renamed over). */
		if (api_disk_full(system_error))
			api_reply_failure(req, FAILURE_DISK_FULL, "%s (free space there and retry)",
					  error);
		else
			api_reply_bad_request(req, "%s", error);
		return;
	}
	cJSON *answer = cJSON_CreateObject();
	cJSON_AddBoolToObject(answer, "applied", applied);
	cJSON_AddBoolToObject(answer, "clockSet", clock_set);
	cJSON_AddStringToObject(answer, "instanceId", init_instance_id());
	api_reply_json(req, 200, answer);
}

const struct api_route api_init_routes[] = {
	{"POST", "/v1/init", API_IDEMPOTENT | API_FOR_CONTROL, 0, handle_init},
	{0},
};
