/* api-screen.c: GET /v1/screen/shot, POST /v1/screen/input,
 * POST /v1/screen/record/start|stop, GET /v1/screen/record (and the route
 * of GET /v1/screen/live, which api-screen-live.c serves).
 *
 * The work itself happens in the screen worker (screen-client.h); here are
 * the HTTP shapes, the one-recording-at-a-time rule, steps and health. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api.h"
#include "router.h"
#include "api-screen-live.h"
#include "config.h"
#include "clock.h"
#include "health.h"
#include "lock.h"
#include "log.h"
#include "random-id.h"
#include "screen-client.h"
#include "steps.h"
#include "xalloc.h"

/* The recording, as boxd knows it. `ended` holds the figures of one that
 * ended by itself (maxSec, an error, the X server gone) until a stop
 * collects them. */
static struct {
	bool starting, running, stopping;
	char *id;
	char *path;
	cJSON *ended;
} recording;

static bool screen_api_ready;

void api_screen_reply_worker_error(struct api_request *req, const cJSON *answer,
				   const char *fallback)
{
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(answer, "error");
	const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(error, "code"));
	const char *message = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(error, "message"));
	api_reply_failure(req, failure_from_code(code), "%s", message ? message : fallback);
}

static void screen_reply_worker_error(struct api_request *req, const cJSON *answer)
{
	api_screen_reply_worker_error(req, answer, "the screen worker failed without saying why");
}

static bool screen_answer_ok(const cJSON *answer)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(answer, "ok"));
}

static double screen_number(const cJSON *object, const char *name)
{
	double value = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(object, name));
	return value == value ? value : 0;
}

/* ---- recording state, health and the worker's own reports ---- */

static void screen_recording_clear(void)
{
	free(recording.id);
	free(recording.path);
	recording.id = recording.path = NULL;
	recording.running = recording.stopping = false;
}

static void screen_keep_ended(cJSON *figures, const char *why)
{
	cJSON_Delete(recording.ended);
	recording.ended = figures;
	cJSON_DeleteItemFromObject(figures, "event");
	cJSON_DeleteItemFromObject(figures, "id");
	cJSON_DeleteItemFromObject(figures, "ok");
	cJSON_AddStringToObject(figures, "recordingId", recording.id);
	steps_add("record", "recording %s ended by itself (%s) after %.1f s", recording.id, why,
		  screen_number(figures, "durationMs") / 1000.0);
	screen_recording_clear();
}

static void screen_on_event(const cJSON *event)
{
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(event, "event"));
	if (!name)
		return;
	if (strcmp(name, "display") == 0) {
		health_invalidate();
	} else if (strcmp(name, "record_ended") == 0 && recording.running) {
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(event, "endedBy"));
		screen_keep_ended(cJSON_Duplicate(event, true), why ? why : "?");
	} else if (strcmp(name, "worker_exit") == 0) {
		health_invalidate();
		if (!recording.running)
			return;
		/* The file stays playable up to its last complete second. */
		cJSON *figures = cJSON_CreateObject();
		struct stat info;
		cJSON_AddStringToObject(figures, "path", recording.path);
		cJSON_AddNumberToObject(figures, "bytes",
					stat(recording.path, &info) == 0 ? (double)info.st_size : 0);
		cJSON_AddStringToObject(figures, "endedBy", "display_lost");
		cJSON_AddStringToObject(figures, "error",
					cJSON_GetStringValue(cJSON_GetObjectItem(event, "message")));
		screen_keep_ended(figures, "the screen worker stopped");
	}
}

static void screen_health(cJSON *health)
{
	cJSON_ReplaceItemInObjectCaseSensitive(health, "recording",
					       cJSON_CreateBool(recording.running));
}

static void screen_api_prepare(void)
{
	if (screen_api_ready)
		return;
	screen_api_ready = true;
	screen_client_on_event(screen_on_event);
	health_register(screen_health);
}

/* ---- shot ---- */

static void screen_on_shot(void *arg, const struct screen_shot *shot,
			   const struct screen_failure *failed)
{
	struct api_request *req = arg;
	if (failed) {
		api_reply_failure(req, failed->failure, "%s", failed->message);
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
	screen_api_prepare();
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
		api_reply_failure(req, failed->failure, "%s", failed->message);
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
	cJSON_ArrayForEach(action, actions) {
		if (++count > 8) {
			snprintf(summary + used, size - used, ", ...");
			break;
		}
		const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(action, "type"));
		const char *keys = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(action, "keys"));
		const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(action, "text"));
		int n;
		if (type && strcmp(type, "type") == 0 && text)
			n = snprintf(summary + used, size - used, "%stype (%zu bytes)", count > 1 ? ", " : "",
				     strlen(text));
		else if (type && strcmp(type, "key") == 0 && keys)
			n = snprintf(summary + used, size - used, "%skey %.40s", count > 1 ? ", " : "", keys);
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
		api_reply_failure(req, FAILURE_LOCKED, "a person has the screen; wait until they hand it back");
		return;
	}
	bool person = lock_is_locked();
	cJSON *body = api_body_json(req);
	if (!body)
		return;
	cJSON *actions = cJSON_GetObjectItemCaseSensitive(body, "actions");
	if (!cJSON_IsArray(actions)) {
		api_reply_bad_request(req, "the body needs \"actions\": an array such as [{\"type\":\"click\"}]");
		return;
	}
	screen_api_prepare();
	char summary[400];
	screen_summarise_input(actions, summary, sizeof summary);
	steps_add("input", "%s%d actions: %s", person ? "the person (takeover): " : "",
		  cJSON_GetArraySize(actions), summary);
	screen_input(actions, screen_on_input, req);
}

/* ---- recording ---- */

/* Creates WORK/.sbx/recordings and names a new file there. */
static bool screen_new_recording(const char *work, char **id, char **path, char *error,
				 size_t error_size)
{
	char *sbx = xasprintf("%s/.sbx", work);
	char *directory = xasprintf("%s/.sbx/recordings", work);
	bool ok = (mkdir(sbx, 0755) == 0 || errno == EEXIST) &&
		  (mkdir(directory, 0755) == 0 || errno == EEXIST);
	if (!ok)
		snprintf(error, error_size, "cannot create %s: %s", directory, strerror(errno));
	char random[9];
	random_hex(random, 4);
	*id = xasprintf("r_%" PRIx64 "%s", (uint64_t)clock_now_ms(), random);
	*path = xasprintf("%s/%s.mp4", directory, *id);
	free(sbx);
	free(directory);
	return ok;
}

static void screen_on_record_start(void *arg, const cJSON *answer, const void *payload,
				   size_t length)
{
	struct api_request *req = arg;
	recording.starting = false;
	if (!screen_answer_ok(answer)) {
		steps_add("record", "recording could not start: %s",
			  cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(answer, "error"),
								   "message")));
		screen_recording_clear();
		screen_reply_worker_error(req, answer);
		return;
	}
	recording.running = true;
	steps_add("record", "recording %s started at %d fps (%dx%d)", recording.id,
		  (int)screen_number(answer, "fps"), (int)screen_number(answer, "width"),
		  (int)screen_number(answer, "height"));
	cJSON *reply = cJSON_CreateObject();
	cJSON_AddStringToObject(reply, "recordingId", recording.id);
	cJSON_AddStringToObject(reply, "path", recording.path);
	cJSON_AddNumberToObject(reply, "startedAt", screen_number(answer, "startedAt"));
	cJSON_AddNumberToObject(reply, "fps", screen_number(answer, "fps"));
	cJSON_AddNumberToObject(reply, "width", screen_number(answer, "width"));
	cJSON_AddNumberToObject(reply, "height", screen_number(answer, "height"));
	api_reply_json(req, 200, reply);
}

static void handle_record_start(struct api_request *req)
{
	cJSON *body = api_body_json(req);
	if (!body)
		return;
	if (recording.starting || recording.running) {
		api_reply_failure(req, FAILURE_CONFLICT, "recording %s is already running; stop it first",
				recording.id);
		return;
	}
	screen_api_prepare();
	char error[300];
	if (!screen_new_recording(api_config()->work_dir, &recording.id, &recording.path, error, sizeof error)) {
		screen_recording_clear();
		api_reply_failure(req, FAILURE_INTERNAL, "%s", error);
		return;
	}
	cJSON *request = cJSON_CreateObject();
	cJSON_AddStringToObject(request, "op", "record_start");
	cJSON_AddStringToObject(request, "path", recording.path);
	static const char *const names[] = { "fps", "maxSec" };
	for (int i = 0; i < 2; i++) {
		const cJSON *value = cJSON_GetObjectItemCaseSensitive(body, names[i]);
		if (value && !cJSON_IsNull(value))
			cJSON_AddItemToObject(request, names[i], cJSON_Duplicate(value, true));
	}
	/* Cleared by the answer; a second start meanwhile gets 409. */
	cJSON_Delete(recording.ended);
	recording.ended = NULL;
	recording.starting = true;
	screen_client_call(request, screen_on_record_start, req);
}

/* The stop answer: the API's four figures plus what else the worker knows. */
static cJSON *screen_stop_reply(const cJSON *figures, const char *id)
{
	cJSON *reply = cJSON_CreateObject();
	cJSON_AddStringToObject(reply, "recordingId", id ? id : "");
	static const char *const copied[] = { "path", "bytes", "durationMs", "frames",
					      "droppedFrames", "fps", "width", "height",
					      "startedAt", "endedBy", "error" };
	for (size_t i = 0; i < sizeof copied / sizeof copied[0]; i++) {
		const cJSON *value = cJSON_GetObjectItemCaseSensitive(figures, copied[i]);
		if (value)
			cJSON_AddItemToObject(reply, copied[i], cJSON_Duplicate(value, true));
	}
	return reply;
}

/* A recording that ended by itself (maxSec, a worker that died) left its
 * figures in `ended`: the next stop collects them. False when there are none. */
static bool reply_ended_recording(struct api_request *req)
{
	if (!recording.ended)
		return false;
	cJSON *figures = recording.ended;
	recording.ended = NULL;
	const cJSON *id = cJSON_GetObjectItem(figures, "recordingId");
	api_reply_json(req, 200, screen_stop_reply(figures, cJSON_GetStringValue(id)));
	cJSON_Delete(figures);
	return true;
}

static void screen_on_record_stop(void *arg, const cJSON *answer, const void *payload,
				  size_t length)
{
	struct api_request *req = arg;
	if (!screen_answer_ok(answer)) {
		/* A recording that ended meanwhile is collected from `ended`. */
		if (reply_ended_recording(req))
			return;
		recording.stopping = false;
		screen_reply_worker_error(req, answer);
		return;
	}
	steps_add("record", "recording %s stopped: %.1f s, %.0f frames, %.0f KiB", recording.id,
		  screen_number(answer, "durationMs") / 1000.0, screen_number(answer, "frames"),
		  screen_number(answer, "bytes") / 1024.0);
	cJSON *reply = screen_stop_reply(answer, recording.id);
	screen_recording_clear();
	api_reply_json(req, 200, reply);
}

static void handle_record_stop(struct api_request *req)
{
	if (reply_ended_recording(req))
		return;
	if (recording.starting || recording.stopping) {
		api_reply_failure(req, FAILURE_CONFLICT, "the recording is %s; try again in a moment",
				recording.starting ? "starting" : "already stopping");
		return;
	}
	if (!recording.running) {
		api_reply_failure(req, FAILURE_CONFLICT, "no recording is running");
		return;
	}
	recording.stopping = true;
	cJSON *request = cJSON_CreateObject();
	cJSON_AddStringToObject(request, "op", "record_stop");
	screen_client_call(request, screen_on_record_stop, req);
}

static void screen_on_record_status(void *arg, const cJSON *answer, const void *payload,
				    size_t length)
{
	struct api_request *req = arg;
	if (!screen_answer_ok(answer)) {
		screen_reply_worker_error(req, answer);
		return;
	}
	bool running = cJSON_IsTrue(cJSON_GetObjectItem(answer, "recording")) && recording.running;
	cJSON *reply = running ? screen_stop_reply(answer, recording.id) : cJSON_CreateObject();
	cJSON_AddBoolToObject(reply, "recording", running);
	api_reply_json(req, 200, reply);
}

static void handle_record_status(struct api_request *req)
{
	if (!recording.running) {
		cJSON *reply = cJSON_CreateObject();
		cJSON_AddBoolToObject(reply, "recording", false);
		api_reply_json(req, 200, reply);
		return;
	}
	cJSON *request = cJSON_CreateObject();
	cJSON_AddStringToObject(request, "op", "record_status");
	screen_client_call(request, screen_on_record_status, req);
}

const struct api_route api_screen_routes[] = {
	{ "GET", "/v1/screen/shot", 0, 0, handle_shot },
	{ "GET", "/v1/screen/live", 0, 0, api_screen_live },
	/* Locked too, but with the takeover exception: see handle_input. */
	{ "POST", "/v1/screen/input", API_IDEMPOTENT, 0, handle_input },
	{ "POST", "/v1/screen/record/start", API_REFUSED_WHILE_LOCKED | API_IDEMPOTENT, 0,
	  handle_record_start },
	{ "POST", "/v1/screen/record/stop", API_IDEMPOTENT, 0, handle_record_stop },
	{ "GET", "/v1/screen/record", 0, 0, handle_record_status },
	{ 0 },
};
