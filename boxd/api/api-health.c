/* api-health.c: GET /v1/health. */
#include "router.h"
#include "health.h"

static void on_health(cJSON *health, void *arg)
{
	api_reply_json(arg, 200, health);
}

static void handle_health(struct api_request *req)
{
	health_collect(on_health, req);
}

const struct api_route api_health_routes[] = {
	{"GET", "/v1/health", API_NOT_ACTIVITY | API_SERVED_FROZEN, 0, handle_health},
	{0},
};
