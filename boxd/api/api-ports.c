/* api-ports.c: GET /v1/ports, every listening TCP socket in the box and who
 * holds it (services/ports.h builds the answer). */
#include "router.h"
#include "ports.h"

static void on_ports(void *arg, cJSON *answer, const char *error)
{
	if (answer)
		api_reply_json(arg, 200, answer);
	else
		api_reply_failure(arg, FAILURE_INTERNAL, "%s", error);
}

/* A client that leaves is not waited for: the listing ends within the
 * scan's milliseconds or Docker's timeout, and its answer is then dropped. */
static void handle_ports(struct api_request *req)
{
	ports_list(api_base(req), on_ports, req);
}

const struct api_route api_ports_routes[] = {
	{"GET", "/v1/ports", 0, 0, handle_ports},
	{0},
};
