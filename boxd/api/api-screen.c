/* api-screen.c: GET /v1/screen/shot, POST /v1/screen/input,
 * POST /v1/screen/record/start|stop, GET /v1/screen/record (and the route
 * of GET /v1/screen/live, which api-screen-live.c serves).
 *
 * The work happens in the screen worker (screen-client.h), the recording's
 * state is recording.h's; here are the HTTP shapes, the lock rule for
 * input, and the steps of shots and input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "router.h"
#include "api-screen-live.h"
#include "lock.h"
#include "recording.h"
#include "screen-client.h"
#include "steps.h"

static void screen_reply_failure(struct api_request *req, const struct screen_failure *failed)
{
	api_reply_failure(req, failed->failure, "%s", failed->message);
}

/* ---- shot ---- */

static void screen_on_shot(void *arg, const struct screen_shot *shot,
			   const struct screen_failure *failed)
{
	struct api_request *req = arg;
	if (failed) {
		screen_reply_failure(req, failed);
		return;
	}
	char width[16], height[16];
	snprintf(width, sizeof width, "%d", shot->width);
	snprintf(height, sizeof height, "%d", shot->height);
	steps_add("shot", "screenshot %sx%s %s, %zu KiB%s", width, height,
		  strstr(shot->content_type, "jpeg") ? "JPEG" : "PNG", (shot->length + 1023) / 1024,
		  shot->cached ? " (unchanged)" : "");
	api_add_header(req, "X-Width", width);
	api_add_header(req, "X-Height", height);
	/* Nothing was drawn since the last shot alike: its bytes, not re-encoded. */
	if (shot->cached)
		api_add_header(req, "X-Cached", "1");
	api_reply_bytes(req, 200, shot->content_type, shot->data, shot->length);
}

static void handle_shot(struct api_request *req)
{
	struct screen_shot_options options = {
		.format = api_query(req, "format"),
		.quality = api_query(req, "quality"),
		.scale = api_query(req, "scale"),
		.x = api_query(req, "x"),
		.y = api_query(req, "y"),
		.w = api_query(req, "w"),
		.h = api_query(req, "h"),
		.cursor = api_query(req, "cursor"),
	};
	screen_shot(&options, screen_on_shot, req);
}

/* ---- input ---- */

static void screen_on_input(void *arg, int performed, const struct screen_failure *failed)
{
	struct api_request *req = arg;
	if (failed) {
		screen_reply_failure(req, failed);
		return;
	}
	cJSON *reply = cJSON_CreateObject();
	cJSON_AddNumberToObject(reply, "done", performed);
	api_reply_json(req, 200, reply);
}

/* "move, click, type (5 characters)": what the agent did, without the text. */
static void screen_summarise_input(const cJSON *actions, char *summary, size_t size)
{
	size_t used = 0;
	int count = 0;
	const cJSON *action;
	summary[0] = '\0';
	cJSON_ArrayForEach(action, actions)
	{
		if (++count > 8) {
			snprintf(summary + used, size - used, ", ...");
			break;
		}
		const char *type =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(action, "type"));
		const char *keys =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(action, "keys"));
		const char *text =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(action, "text"));
		int n;
		if (type && strcmp(type, "type") == 0 && text)
			n = snprintf(summary + used, size - used, "%stype (%zu bytes)",
				     count > 1 ? ", " : "", strlen(text));
		else if (type && strcmp(type, "key") == 0 && keys)
			n = snprintf(summary + used, size - used, "%skey %.40s",
				     count > 1 ? ", " : "", keys);
		else
			n = snprintf(summary + used, size - used, "%s%.20s", count > 1 ? ", " : "",
				     type ? type : "?");
		if (n < 0 || (size_t)n >= size - used)
			break;
		used += (size_t)n;
	}
}

static void handle_input(struct api_request *req)
{
	/* The lock rule, applied here rather than by the router: the person who
	 * holds the lock sends input with its token (X-Takeover). */
	const char *takeover = api_header(req, "X-Takeover");
	if (!lock_admits(takeover)) {
		api_reply_failure(req, FAILURE_LOCKED,
				  "a person has the screen; wait until they hand it back");
		return;
	}
	bool person = lock_is_locked();
	cJSON *body = api_body_json(req);
	if (!body)
		return;
	cJSON *actions = cJSON_GetObjectItemCaseSensitive(body, "actions");
	if (!cJSON_IsArray(actions)) {
		api_reply_bad_request(
			req, "the body needs \"actions\": an array such as [{\"type\":\"click\"}]");
		return;
	}
	char summary[400];
	screen_summarise_input(actions, summary, sizeof summary);
	steps_add("input", "%s%d actions: %s", person ? "the person (takeover): " : "",
		  cJSON_GetArraySize(actions), summary);
	screen_input(actions, screen_on_input, req);
}

/* ---- recording ---- */

static void screen_on_record_start(void *arg, const struct recording_started *started,
				   const struct screen_failure *failed)
{
	struct api_request *req = arg;
	if (failed) {
		screen_reply_failure(req, failed);
		return;
	}
	cJSON *reply = cJSON_CreateObject();
	cJSON_AddStringToObject(reply, "recordingId", started->id);
	cJSON_AddStringToObject(reply, "path", started->path);
	cJSON_AddNumberToObject(reply, "startedAt", (double)started->started_at);
	cJSON_AddNumberToObject(reply, "fps", started->fps);
	cJSON_AddNumberToObject(reply, "width", started->width);
	cJSON_AddNumberToObject(reply, "height", started->height);
	api_reply_json(req, 200, reply);
}

static void handle_record_start(struct api_request *req)
{
	cJSON *body = api_body_json(req);
	if (!body)
		return;
	recording_start(cJSON_GetObjectItemCaseSensitive(body, "fps"),
			cJSON_GetObjectItemCaseSensitive(body, "maxSec"), screen_on_record_start,
			req);
}

/* The stop answer (and the status's): the API's four figures plus what
 * else the worker knows; only the file's, when the worker died. */
static cJSON *screen_figures_json(const char *id, const struct screen_record_figures *figures)
{
	cJSON *reply = cJSON_CreateObject();
	cJSON_AddStringToObject(reply, "recordingId", id ? id : "");
	if (figures->path)
		cJSON_AddStringToObject(reply, "path", figures->path);
	cJSON_AddNumberToObject(reply, "bytes", (double)figures->bytes);
	if (figures->measured) {
		cJSON_AddNumberToObject(reply, "durationMs", (double)figures->duration_ms);
		cJSON_AddNumberToObject(reply, "frames", (double)figures->frames);
		cJSON_AddNumberToObject(reply, "droppedFrames", (double)figures->dropped_frames);
		cJSON_AddNumberToObject(reply, "fps", figures->fps);
		cJSON_AddNumberToObject(reply, "width", figures->width);
		cJSON_AddNumberToObject(reply, "height", figures->height);
		cJSON_AddNumberToObject(reply, "startedAt", (double)figures->started_at);
	}
	if (figures->ended_by)
		cJSON_AddStringToObject(reply, "endedBy", figures->ended_by);
	if (figures->error)
		cJSON_AddStringToObject(reply, "error", figures->error);
	return reply;
}

static void screen_on_record_stop(void *arg, const char *id,
				  const struct screen_record_figures *figures,
				  const struct screen_failure *failed)
{
	struct api_request *req = arg;
	if (failed)
		screen_reply_failure(req, failed);
	else
		api_reply_json(req, 200, screen_figures_json(id, figures));
}

static void handle_record_stop(struct api_request *req)
{
	recording_stop(screen_on_record_stop, req);
}

static void screen_on_record_status(void *arg, const char *id,
				    const struct screen_record_figures *figures,
				    const struct screen_failure *failed)
{
	struct api_request *req = arg;
	if (failed) {
		screen_reply_failure(req, failed);
		return;
	}
	cJSON *reply = figures ? screen_figures_json(id, figures) : cJSON_CreateObject();
	cJSON_AddBoolToObject(reply, "recording", figures != NULL);
	api_reply_json(req, 200, reply);
}

static void handle_record_status(struct api_request *req)
{
	recording_status(screen_on_record_status, req);
}

const struct api_route api_screen_routes[] = {
	{"GET", "/v1/screen/shot", 0, 0, handle_shot},
	{"GET", "/v1/screen/live", API_LIVE, 0, api_screen_live},
	/* Locked too, but with the takeover exception: see handle_input. */
	{"POST", "/v1/screen/input", API_IDEMPOTENT, 0, handle_input},
	{"POST", "/v1/screen/record/start", API_REFUSED_WHILE_LOCKED | API_IDEMPOTENT, 0,
	 handle_record_start},
	{"POST", "/v1/screen/record/stop", API_IDEMPOTENT, 0, handle_record_stop},
	{"GET", "/v1/screen/record", 0, 0, handle_record_status},
	{0},
};
