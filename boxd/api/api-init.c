/* api-init.c: POST /v1/init, from the control plane at claim and after
 * every thaw or restore (init.h). */
#include "http/api.h"
#include "init.h"

static void handle_init(struct api_request *req)
{
	cJSON *body = api_body_json(req);
	if (!body)
		return;
	bool applied, clock_set;
	char error[512];
	if (!init_apply(body, &applied, &clock_set, error, sizeof error)) {
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
