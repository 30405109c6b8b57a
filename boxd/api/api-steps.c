/* api-steps.c: GET /v1/steps. */
#include "router.h"
#include "steps.h"

static void handle_steps(struct api_request *req)
{
	api_reply_json(req, 200, steps_to_json());
}

const struct api_route api_steps_routes[] = {
	{"GET", "/v1/steps", 0, 0, handle_steps},
	{0},
};
