/* api-screen-live.c: GET /v1/screen/live, the live screen as fragmented MP4.
 *
 * The worker captures and encodes (boxd/screen/live.c), one "pipe" per set of
 * settings (fps, scale), and sends each fragment once as an event. Here it is
 * fanned out to the viewers of that pipe: each new viewer gets the init
 * segment, then fragments from the next keyframe on (a keyframe is asked
 * for at once; the worker makes one within LIVE_KEY_MIN_GAP_MS). A viewer
 * whose socket has more than LIVE_VIEWER_MAX_PENDING bytes waiting skips
 * fragments until the next keyframe, so boxd's memory stays bounded whatever
 * the viewer does. The last viewer to leave stops the pipe. */
#include "api-screen-live.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router.h"
#include "clock.h"
#include "log.h"
#include "screen-client.h"
#include "xalloc.h"

/* Past this many bytes unsent to a viewer, it skips to the next keyframe. */
#define LIVE_VIEWER_MAX_PENDING (1024 * 1024)
/* A viewer that skipped asks for a keyframe at most this often. */
#define LIVE_CATCH_UP_KEY_GAP_MS 2000
#define LIVE_DEFAULT_FPS 30
#define LIVE_MAX_FPS 60

struct live_viewer;

struct live_pipe {
	int id;
	int fps;
	double scale;
	bool running;            /* the worker answered live_start */
	char width[16], height[16], started_at[24];
	char content_type[64];   /* video/mp4 with the codec's name */
	uint8_t *init;           /* the init segment (ftyp+moov) */
	size_t init_length;
	uint8_t *first_key;      /* the first keyframe, until the start answer */
	size_t first_key_length;
	struct live_viewer *viewers;
	int64_t last_catch_up_ms;
	struct live_pipe *next;
};

struct live_viewer {
	struct api_request *req;
	struct live_pipe *pipe;
	bool streaming;          /* the answer has started (init written) */
	bool want_key;           /* skipping until a keyframe */
	int64_t fragments, skipped;
	struct live_viewer *next;
};

static struct live_pipe *pipes;

/* Answers a worker's error answer with its code and message, `fallback`
 * when it gave no message. */
static void api_screen_reply_worker_error(struct api_request *req, const cJSON *answer,
					  const char *fallback)
{
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(answer, "error");
	const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(error, "code"));
	const char *message = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(error, "message"));
	api_reply_failure(req, failure_from_code(code), "%s", message ? message : fallback);
}
static uint8_t *live_copy(const void *data, size_t length)
{
	uint8_t *copy = xmalloc(length ? length : 1);
	memcpy(copy, data, length);
	return copy;
}

static int last_pipe_id;
static bool listening;

/* ---- pipes ---- */

static void live_pipe_free(struct live_pipe *pipe)
{
	struct live_pipe **link = &pipes;
	while (*link && *link != pipe)
		link = &(*link)->next;
	if (*link)
		*link = pipe->next;
	free(pipe->init);
	free(pipe->first_key);
	free(pipe);
}

static struct live_pipe *live_pipe_find(int id)
{
	for (struct live_pipe *pipe = pipes; pipe; pipe = pipe->next)
		if (pipe->id == id)
			return pipe;
	return NULL;
}

static void live_ignore_answer(void *arg, const cJSON *answer, const void *payload, size_t length)
{
}

static void live_ask_worker(const char *op, int id)
{
	cJSON *request = cJSON_CreateObject();
	cJSON_AddStringToObject(request, "op", op);
	cJSON_AddNumberToObject(request, "live", id);
	screen_client_call(request, live_ignore_answer, NULL);
}

/* ---- viewers ---- */

static void live_viewer_unlink(struct live_viewer *viewer)
{
	struct live_viewer **link = &viewer->pipe->viewers;
	while (*link && *link != viewer)
		link = &(*link)->next;
	if (*link)
		*link = viewer->next;
}

/* The pipe lost a viewer: the last one stops it (a starting pipe stops once
 * its start is answered). */
static void live_pipe_check_empty(struct live_pipe *pipe)
{
	if (pipe->viewers || !pipe->running)
		return;
	log_msg(LOG_LEVEL_DEBUG, "live view %d: the last viewer left; stopping", pipe->id);
	live_ask_worker("live_stop", pipe->id);
	live_pipe_free(pipe);
}

static void live_on_drained(struct api_request *req);

static void live_viewer_gone(struct api_request *req)
{
	struct live_viewer *viewer = api_data(req);
	struct live_pipe *pipe = viewer->pipe;
	live_viewer_unlink(viewer);
	if (viewer->streaming)
		api_stream_end(req);
	else
		api_reply_failure(req, FAILURE_UNAVAILABLE, "the viewer left");
	live_pipe_check_empty(pipe);
}

static void live_viewer_write(struct live_viewer *viewer, const void *data, size_t length)
{
	api_stream_write(viewer->req, data, length);
}

/* Starts the answer: headers, the init segment, and (for the first viewers)
 * the first keyframe; later viewers wait for a keyframe asked for now. */
static void live_viewer_begin(struct live_viewer *viewer)
{
	struct live_pipe *pipe = viewer->pipe;
	api_add_header(viewer->req, "X-Width", pipe->width);
	api_add_header(viewer->req, "X-Height", pipe->height);
	api_add_header(viewer->req, "X-Started-At", pipe->started_at);
	api_add_header(viewer->req, "Cache-Control", "no-store");
	api_stream_start(viewer->req, 200, pipe->content_type, live_on_drained);
	viewer->streaming = true;
	live_viewer_write(viewer, pipe->init, pipe->init_length);
	if (pipe->first_key) {
		live_viewer_write(viewer, pipe->first_key, pipe->first_key_length);
		viewer->fragments++;
	} else {
		viewer->want_key = true;
		live_ask_worker("live_key", pipe->id);
	}
}

/* A viewer that skipped has taken what it had: it asks for a keyframe to
 * go on from (not more often than LIVE_CATCH_UP_KEY_GAP_MS a pipe, so one
 * slow viewer cannot fill everyone's stream with keyframes). */
static void live_on_drained(struct api_request *req)
{
	struct live_viewer *viewer = api_data(req);
	struct live_pipe *pipe = viewer->pipe;
	if (!viewer->want_key || !pipe->running || api_stream_pending(req) > 0)
		return;
	int64_t now = clock_monotonic_ms();
	if (now - pipe->last_catch_up_ms < LIVE_CATCH_UP_KEY_GAP_MS)
		return;
	pipe->last_catch_up_ms = now;
	live_ask_worker("live_key", pipe->id);
}

static void live_fan_out(struct live_pipe *pipe, bool key, const void *data, size_t length)
{
	for (struct live_viewer *viewer = pipe->viewers; viewer; viewer = viewer->next) {
		if (!viewer->streaming)
			continue;
		if (api_stream_pending(viewer->req) > LIVE_VIEWER_MAX_PENDING) {
			if (!viewer->want_key)
				log_msg(LOG_LEVEL_DEBUG, "live view %d: a viewer is behind; it skips to the next keyframe",
					pipe->id);
			viewer->want_key = true;
		}
		if (viewer->want_key && !key) {
			viewer->skipped++;
			continue;
		}
		viewer->want_key = false;
		viewer->fragments++;
		live_viewer_write(viewer, data, length);
	}
}

/* Every viewer's stream ends (the pipe ended, the worker went away). */
static void live_pipe_end(struct live_pipe *pipe, const char *why)
{
	log_msg(LOG_LEVEL_INFO, "live view %d ended: %s", pipe->id, why);
	while (pipe->viewers) {
		struct live_viewer *viewer = pipe->viewers;
		pipe->viewers = viewer->next;
		api_on_client_gone(viewer->req, NULL);
		if (viewer->streaming)
			api_stream_end(viewer->req);
		else
			api_reply_failure(viewer->req, FAILURE_DISPLAY_UNAVAILABLE, "%s", why);
	}
	live_pipe_free(pipe);
}

static void live_on_stream(const cJSON *event, const void *payload, size_t length)
{
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(event, "event"));
	if (name && strcmp(name, "worker_exit") == 0) {
		/* Running pipes end here; a starting one gets its live_start
		 * answered with the worker's end right after this, and ends there. */
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(event, "message"));
		struct live_pipe *pipe = pipes;
		while (pipe) {
			struct live_pipe *next = pipe->next;
			if (pipe->running)
				live_pipe_end(pipe, why ? why : "the screen worker stopped");
			pipe = next;
		}
		return;
	}
	if (!name || strcmp(name, "live") != 0)
		return;
	double id = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(event, "live"));
	struct live_pipe *pipe = id == id ? live_pipe_find((int)id) : NULL;
	const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(event, "kind"));
	if (!pipe || !kind)
		return; /* a pipe stopped meanwhile */
	bool key = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(event, "key"));
	if (strcmp(kind, "init") == 0 && !pipe->init) {
		pipe->init = live_copy(payload, length);
		pipe->init_length = length;
	} else if (strcmp(kind, "fragment") == 0 && !pipe->running) {
		if (key && !pipe->first_key) {
			pipe->first_key = live_copy(payload, length);
			pipe->first_key_length = length;
		}
	} else if (strcmp(kind, "fragment") == 0) {
		live_fan_out(pipe, key, payload, length);
	} else if (strcmp(kind, "ended") == 0) {
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(event, "error"));
		live_ask_worker("live_stop", pipe->id);
		live_pipe_end(pipe, why ? why : "the live view stopped");
	}
}

static void live_on_started(void *arg, const cJSON *answer, const void *payload, size_t length)
{
	struct live_pipe *pipe = arg;
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(answer, "ok")) || !pipe->init) {
		while (pipe->viewers) {
			struct live_viewer *viewer = pipe->viewers;
			pipe->viewers = viewer->next;
			api_on_client_gone(viewer->req, NULL);
			api_screen_reply_worker_error(viewer->req, answer, "the live view did not start");
		}
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(answer, "ok")))
			live_ask_worker("live_stop", pipe->id);
		live_pipe_free(pipe);
		return;
	}
	pipe->running = true;
	snprintf(pipe->width, sizeof pipe->width, "%.0f",
		 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(answer, "width")));
	snprintf(pipe->height, sizeof pipe->height, "%.0f",
		 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(answer, "height")));
	snprintf(pipe->started_at, sizeof pipe->started_at, "%.0f",
		 cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(answer, "startedAt")));
	const char *codec = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, "codec"));
	if (codec && strlen(codec) < 20 && codec[strspn(codec, "avc1.0123456789abcdef")] == '\0')
		snprintf(pipe->content_type, sizeof pipe->content_type, "video/mp4; codecs=\"%s\"", codec);
	else
		snprintf(pipe->content_type, sizeof pipe->content_type, "video/mp4");
	log_msg(LOG_LEVEL_INFO, "live view %d started: %sx%s at up to %d fps", pipe->id, pipe->width,
		pipe->height, pipe->fps);
	for (struct live_viewer *viewer = pipe->viewers; viewer; viewer = viewer->next)
		live_viewer_begin(viewer);
	free(pipe->first_key);
	pipe->first_key = NULL;
	live_pipe_check_empty(pipe);
}

/* ---- the route ---- */

/* fps: plain decimal digits; scale: a decimal number. */
static bool live_parse(struct api_request *req, int *fps, double *scale)
{
	const char *fps_text = api_query(req, "fps"), *scale_text = api_query(req, "scale");
	*fps = LIVE_DEFAULT_FPS;
	*scale = 1;
	if (fps_text) {
		char *end;
		errno = 0;
		long value = strtol(fps_text, &end, 10);
		if (!fps_text[0] || fps_text[strspn(fps_text, "0123456789")] || *end || errno ||
		    value < 1 || value > LIVE_MAX_FPS) {
			api_reply_bad_request(req, "fps must be an integer from 1 to %d", LIVE_MAX_FPS);
			return false;
		}
		*fps = (int)value;
	}
	if (scale_text) {
		char *end;
		errno = 0;
		double value = strtod(scale_text, &end);
		if (!scale_text[0] || scale_text[strspn(scale_text, "0123456789.")] || *end || errno ||
		    !(value > 0) || value > 1) {
			api_reply_bad_request(req, "scale must be a number above 0 and at most 1");
			return false;
		}
		*scale = value;
	}
	return true;
}

static void live_viewer_release(void *data)
{
	free(data);
}

void api_screen_live(struct api_request *req)
{
	int fps;
	double scale;
	if (!live_parse(req, &fps, &scale))
		return;
	if (!listening) {
		screen_client_on_stream(live_on_stream);
		listening = true;
	}
	struct live_pipe *pipe = pipes;
	while (pipe && !(pipe->fps == fps && pipe->scale == scale))
		pipe = pipe->next;
	bool new_pipe = !pipe;
	if (new_pipe) {
		pipe = xcalloc(1, sizeof *pipe);
		pipe->id = ++last_pipe_id;
		pipe->fps = fps;
		pipe->scale = scale;
		pipe->last_catch_up_ms = clock_monotonic_ms() - LIVE_CATCH_UP_KEY_GAP_MS;
		pipe->next = pipes;
		pipes = pipe;
	}
	struct live_viewer *viewer = xcalloc(1, sizeof *viewer);
	viewer->req = req;
	viewer->pipe = pipe;
	viewer->next = pipe->viewers;
	pipe->viewers = viewer;
	api_set_data(req, viewer, live_viewer_release);
	api_on_client_gone(req, live_viewer_gone);
	if (pipe->running)
		live_viewer_begin(viewer);
	if (new_pipe) {
		cJSON *request = cJSON_CreateObject();
		cJSON_AddStringToObject(request, "op", "live_start");
		cJSON_AddNumberToObject(request, "live", pipe->id);
		cJSON_AddNumberToObject(request, "fps", fps);
		cJSON_AddNumberToObject(request, "scale", scale);
		screen_client_call(request, live_on_started, pipe);
	}
}
