/* api-services.c: /v1/services (services.h): the table, one entry, and the
 * wait for a listener. Writes act for the control plane (API_FOR_CONTROL):
 * a command cannot point a name somewhere else. */
#include <stdlib.h>

#include "router.h"
#include "services.h"

#define SERVICES_MAX_WAIT_SEC 3600
#define SERVICES_MAX_BODY (4u << 20)

static void on_applied(void *arg, enum services_outcome outcome, cJSON *table, const char *error)
{
	struct api_request *req = arg;
	if (outcome == SERVICES_APPLIED)
		api_reply_json(req, 200, table);
	else if (outcome == SERVICES_REFUSED)
		api_reply_bad_request(req, "%s", error);
	else
		api_reply_failure(req, FAILURE_UNAVAILABLE, "%s", error);
}

static void apply(struct api_request *req, struct services_change *change, const char *error)
{
	if (!change)
		api_reply_bad_request(req, "%s", error);
	else
		services_apply(change, on_applied, req);
}

static void handle_replace(struct api_request *req)
{
	cJSON *body = api_body_json(req);
	if (!body)
		return;
	char error[512];
	apply(req, services_change_replace(body, error, sizeof error), error);
}

static void handle_put(struct api_request *req)
{
	cJSON *body = api_body_json(req);
	if (!body)
		return;
	char error[512];
	apply(req, services_change_put(api_param(req, 0), body, error, sizeof error), error);
}

static void handle_delete(struct api_request *req)
{
	bool not_found;
	struct services_change *change = services_change_delete(api_param(req, 0), &not_found);
	if (not_found)
		api_reply_not_found(req, "no service %s", api_param(req, 0));
	else
		services_apply(change, on_applied, req);
}

static void handle_list(struct api_request *req)
{
	api_reply_json(req, 200, services_table_json());
}

/* ---- waiting for a listener ---- */

static void on_waited(void *arg, bool timed_out)
{
	struct api_request *req = arg;
	api_set_data(req, NULL, NULL);
	cJSON *entry = services_entry(api_param(req, 0));
	if (!entry) {
		api_reply_not_found(req, "service %s was removed while waited for",
				    api_param(req, 0));
		return;
	}
	if (timed_out)
		cJSON_AddBoolToObject(entry, "waitTimedOut", true);
	api_reply_json(req, 200, entry);
}

static void release_waiter(void *data)
{
	services_wait_cancel(data);
}

static void handle_wait(struct api_request *req)
{
	cJSON *body = api_body_json(req);
	if (!body)
		return;
	const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(body, "timeoutSec");
	double seconds = 60;
	if (timeout && (!cJSON_IsNumber(timeout) || timeout->valuedouble < 0 ||
			timeout->valuedouble > SERVICES_MAX_WAIT_SEC)) {
		api_reply_bad_request(req, "timeoutSec must be a number from 0 to %d",
				      SERVICES_MAX_WAIT_SEC);
		return;
	}
	if (timeout)
		seconds = timeout->valuedouble;
	cJSON *entry = services_entry(api_param(req, 0));
	if (!entry) {
		api_reply_not_found(req, "no service %s", api_param(req, 0));
		return;
	}
	cJSON_Delete(entry);
	struct services_waiter *waiter =
		services_wait(api_param(req, 0), (int)(seconds * 1000), on_waited, req);
	/* A client that leaves ends the wait (the request's data is released). */
	if (waiter)
		api_set_data(req, waiter, release_waiter);
}

const struct api_route api_services_routes[] = {
	{"GET", "/v1/services", 0, 0, handle_list},
	{"PUT", "/v1/services", API_IDEMPOTENT | API_FOR_CONTROL, SERVICES_MAX_BODY,
	 handle_replace},
	{"PUT", "/v1/services/{}", API_IDEMPOTENT | API_FOR_CONTROL, 0, handle_put},
	{"DELETE", "/v1/services/{}", API_IDEMPOTENT | API_FOR_CONTROL, 0, handle_delete},
	{"POST", "/v1/services/{}/wait", 0, 0, handle_wait},
	{0},
};
