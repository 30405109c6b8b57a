/* screen-requests.c: the screen worker's answers to boxd's requests:
 * shot, input, record_start, record_stop, record_status, status (the
 * live view's are in live-ops.c, the windows' in windows-ops.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "av-lazy.h"
#include "input.h"
#include "clock.h"
#include "log.h"
#include "record.h"
#include "screen-encode.h"
#include "screen-worker.h"

/* Shots larger than this (after scaling) are refused rather than allocated. */
#define SHOT_MAX_PIXELS (8192 * 8192)

struct shot_request {
	enum shot_format format;
	int quality;
	double scale;
	long x, y, width, height;
	bool cursor;
};

static bool shot_parse(struct worker *worker, double id, const cJSON *request,
		       struct shot_request *shot)
{
	const char *format =
		cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(request, "format"));
	int screen_w = screen_width(worker->screen), screen_h = screen_height(worker->screen);
	long quality, cursor;
	if (format && strcmp(format, "png") != 0 && strcmp(format, "jpeg") != 0 &&
	    strcmp(format, "jpg") != 0) {
		worker_error(worker, id, FAILURE_BAD_REQUEST,
			     "format must be png or jpeg, not \"%.20s\"", format);
		return false;
	}
	shot->format = format && format[0] == 'j' ? SHOT_FORMAT_JPEG : SHOT_FORMAT_PNG;
	if (!worker_integer(request, "quality", 80, 1, 100, &quality)) {
		worker_error(worker, id, FAILURE_BAD_REQUEST,
			     "quality must be an integer from 1 to 100");
		return false;
	}
	shot->quality = (int)quality;
	if (!worker_number(request, "scale", 1, &shot->scale) || !(shot->scale > 0) ||
	    shot->scale > 4) {
		worker_error(worker, id, FAILURE_BAD_REQUEST,
			     "scale must be a number above 0 and at most 4");
		return false;
	}
	if (!worker_integer(request, "cursor", 1, 0, 1, &cursor)) {
		worker_error(worker, id, FAILURE_BAD_REQUEST, "cursor must be 0 or 1");
		return false;
	}
	shot->cursor = cursor;
	if (!worker_integer(request, "x", 0, 0, screen_w - 1, &shot->x) ||
	    !worker_integer(request, "y", 0, 0, screen_h - 1, &shot->y) ||
	    !worker_integer(request, "w", screen_w - shot->x, 1, screen_w - shot->x,
			    &shot->width) ||
	    !worker_integer(request, "h", screen_h - shot->y, 1, screen_h - shot->y,
			    &shot->height)) {
		worker_error(worker, id, FAILURE_BAD_REQUEST,
			     "the region x, y, w, h must be integers inside the %dx%d screen",
			     screen_w, screen_h);
		return false;
	}
	return true;
}

static void shot_answer(struct worker *worker, double id, const struct shot_request *shot,
			const struct shot_cache *cache, bool cached)
{
	cJSON *answer = worker_answer(id);
	cJSON_AddNumberToObject(answer, "width", cache->width);
	cJSON_AddNumberToObject(answer, "height", cache->height);
	cJSON_AddStringToObject(answer, "contentType",
				shot->format == SHOT_FORMAT_PNG ? "image/png" : "image/jpeg");
	if (cached)
		cJSON_AddBoolToObject(answer, "cached", true);
	worker_send(worker, answer, cache->data, cache->length);
}

/* The cache key of a shot: the damage generation first, then the cursor
 * (both read before the grab: a drawing or a move after them makes the next
 * shot's key differ). */
static void shot_key_make(struct worker *worker, const struct shot_request *shot,
			  const struct screen_cursor *cursor, uint64_t generation,
			  struct shot_key *key)
{
	*key = (struct shot_key){
		.generation = generation,
		.screen_width = screen_width(worker->screen),
		.screen_height = screen_height(worker->screen),
		.format = shot->format,
		.quality = shot->format == SHOT_FORMAT_JPEG ? shot->quality : 0,
		.scale = shot->scale,
		.x = shot->x,
		.y = shot->y,
		.width = shot->width,
		.height = shot->height,
		.cursor = shot->cursor,
	};
	if (shot->cursor && cursor)
		screen_cursor_where(cursor, &key->cursor_x, &key->cursor_y, &key->cursor_serial);
}

/* The shot's file into worker->shots: the cached one when nothing it shows
 * changed (*cached), else grabbed and encoded. On failure, the failure and
 * why. */
static bool shot_make(struct worker *worker, const struct shot_request *shot, int out_width,
		      int out_height, bool *cached, enum failure *failure, char *error,
		      size_t error_size)
{
	struct screen_cursor *cursor = NULL;
	uint64_t generation = shot->cursor ? screen_look(worker->screen, &cursor)
					   : screen_damage_generation(worker->screen);
	struct shot_key key;
	shot_key_make(worker, shot, cursor, generation, &key);
	*cached = shot_cache_find(&worker->shots, &key) != NULL;
	if (*cached) {
		screen_cursor_free(cursor);
		return true;
	}
	struct screen_image image;
	*failure = FAILURE_INTERNAL;
	if (!screen_grab(worker->grabber, &image, error, error_size)) {
		screen_cursor_free(cursor);
		return false;
	}
	/* The screen may have shrunk since the region was checked. */
	if (shot->x + shot->width > image.width || shot->y + shot->height > image.height) {
		screen_cursor_free(cursor);
		*failure = FAILURE_BAD_REQUEST;
		snprintf(error, error_size, "the region lies outside the %dx%d screen", image.width,
			 image.height);
		return false;
	}
	image.pixels += (size_t)shot->y * (size_t)image.stride + (size_t)shot->x * 4;
	image.width = (int)shot->width;
	image.height = (int)shot->height;
	if (cursor)
		screen_cursor_draw(cursor, &image, (int)shot->x, (int)shot->y);
	screen_cursor_free(cursor);
	uint8_t *data;
	size_t length;
	if (!screen_encode(worker->encoder, &image, shot->format, shot->quality, out_width,
			   out_height, &data, &length, error, error_size))
		return false;
	shot_cache_store(&worker->shots, &key, data, length, out_width, out_height);
	return true;
}

static void op_shot(struct worker *worker, double id, const cJSON *request)
{
	struct shot_request shot;
	if (!shot_parse(worker, id, request, &shot))
		return;
	int out_width = (int)lround((double)shot.width * shot.scale);
	int out_height = (int)lround((double)shot.height * shot.scale);
	out_width = out_width < 1 ? 1 : out_width;
	out_height = out_height < 1 ? 1 : out_height;
	if ((double)out_width * out_height > SHOT_MAX_PIXELS) {
		worker_error(worker, id, FAILURE_BAD_REQUEST,
			     "a %dx%d image is too large; lower scale", out_width, out_height);
		return;
	}
	bool cached;
	enum failure failure;
	char error[256];
	if (!shot_make(worker, &shot, out_width, out_height, &cached, &failure, error,
		       sizeof error)) {
		worker_error(worker, id, failure, "%s", error);
		return;
	}
	shot_answer(worker, id, &shot, &worker->shots, cached);
}

void worker_warm_up(struct worker *worker)
{
	struct shot_request shot = {
		.format = SHOT_FORMAT_PNG,
		.quality = 80,
		.scale = 1,
		.cursor = true,
		.width = screen_width(worker->screen),
		.height = screen_height(worker->screen),
	};
	bool cached;
	enum failure failure;
	char error[256];
	int64_t start = clock_monotonic_us();
	if (!shot_make(worker, &shot, (int)shot.width, (int)shot.height, &cached, &failure, error,
		       sizeof error))
		log_msg(LOG_LEVEL_DEBUG, "warming up: %s", error);
	else
		log_msg(LOG_LEVEL_DEBUG, "warmed up in %.1f ms",
			(double)(clock_monotonic_us() - start) / 1000);
}

static void op_input(struct worker *worker, double id, const cJSON *request)
{
	const cJSON *actions = cJSON_GetObjectItemCaseSensitive(request, "actions");
	char error[512];
	if (!input_check(actions, error, sizeof error)) {
		worker_error(worker, id, FAILURE_BAD_REQUEST, "%s", error);
		return;
	}
	int done = 0;
	if (!input_run(worker->input, actions, &done, error, sizeof error)) {
		worker_error(worker, id, FAILURE_INTERNAL, "action %d failed after %d done: %s",
			     done, done, error);
		return;
	}
	cJSON *answer = worker_answer(id);
	cJSON_AddNumberToObject(answer, "done", done);
	worker_send(worker, answer, NULL, 0);
}

static void record_stats_to_json(cJSON *json, const struct record_stats *stats)
{
	cJSON_AddStringToObject(json, "path", stats->path);
	cJSON_AddNumberToObject(json, "bytes", (double)stats->bytes);
	cJSON_AddNumberToObject(json, "durationMs", (double)stats->duration_ms);
	cJSON_AddNumberToObject(json, "frames", (double)stats->frames);
	cJSON_AddNumberToObject(json, "droppedFrames", (double)stats->dropped);
	cJSON_AddNumberToObject(json, "fps", stats->fps);
	cJSON_AddNumberToObject(json, "width", stats->width);
	cJSON_AddNumberToObject(json, "height", stats->height);
	cJSON_AddNumberToObject(json, "startedAt", (double)stats->started_at);
	if (stats->ended_by)
		cJSON_AddStringToObject(json, "endedBy", stats->ended_by);
	if (stats->ended_by && strcmp(stats->ended_by, "error") == 0)
		cJSON_AddStringToObject(json, "error", stats->error);
}

static void op_record_start(struct worker *worker, double id, const cJSON *request)
{
	const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(request, "path"));
	long fps, max_seconds;
	if (worker->record) {
		worker_error(worker, id, FAILURE_CONFLICT, "a recording is already running");
		return;
	}
	if (!path || path[0] != '/') {
		worker_error(worker, id, FAILURE_BAD_REQUEST,
			     "record_start needs an absolute path");
		return;
	}
	if (!worker_integer(request, "fps", 30, 1, RECORD_MAX_FPS, &fps)) {
		worker_error(worker, id, FAILURE_BAD_REQUEST, "fps must be an integer from 1 to %d",
			     RECORD_MAX_FPS);
		return;
	}
	if (!worker_integer(request, "maxSec", 1800, 1, RECORD_MAX_SECONDS, &max_seconds)) {
		worker_error(worker, id, FAILURE_BAD_REQUEST,
			     "maxSec must be an integer from 1 to %d", RECORD_MAX_SECONDS);
		return;
	}
	char error[256];
	/* libavcodec and libavformat are loaded by the first recording. */
	if (!av_lazy_load(error, sizeof error)) {
		worker_error(worker, id, FAILURE_INTERNAL, "cannot record: %s", error);
		return;
	}
	worker->record = record_start(worker->screen, path, (int)fps, (int)max_seconds,
				      worker->wake_fd, error, sizeof error);
	if (!worker->record) {
		worker_error(worker, id, FAILURE_INTERNAL, "cannot record: %s", error);
		return;
	}
	struct record_stats stats;
	record_progress(worker->record, &stats);
	cJSON *answer = worker_answer(id);
	record_stats_to_json(answer, &stats);
	worker_send(worker, answer, NULL, 0);
}

void worker_stop_recording(struct worker *worker, bool tell)
{
	if (!worker->record)
		return;
	struct record_stats stats;
	record_finish(worker->record, &stats);
	worker->record = NULL;
	if (tell) {
		cJSON *event = cJSON_CreateObject();
		cJSON_AddStringToObject(event, "event", "record_ended");
		record_stats_to_json(event, &stats);
		worker_send(worker, event, NULL, 0);
	}
	free((char *)stats.path);
}

void worker_on_record_wake(struct worker *worker)
{
	uint64_t count;
	ssize_t unused = read(worker->wake_fd, &count, sizeof count);
	(void)unused;
	if (worker->record && record_ended(worker->record))
		worker_stop_recording(worker, true);
}

static void op_record_stop(struct worker *worker, double id, const cJSON *request)
{
	if (!worker->record) {
		worker_error(worker, id, FAILURE_CONFLICT, "no recording is running");
		return;
	}
	struct record_stats stats;
	record_finish(worker->record, &stats);
	worker->record = NULL;
	cJSON *answer = worker_answer(id);
	record_stats_to_json(answer, &stats);
	worker_send(worker, answer, NULL, 0);
	free((char *)stats.path);
}

static void op_record_status(struct worker *worker, double id, const cJSON *request)
{
	cJSON *answer = worker_answer(id);
	cJSON_AddBoolToObject(answer, "recording", worker->record != NULL);
	if (worker->record) {
		struct record_stats stats;
		record_progress(worker->record, &stats);
		record_stats_to_json(answer, &stats);
	}
	worker_send(worker, answer, NULL, 0);
}

/* The display's state, connecting first if it can. */
static void op_status(struct worker *worker, double id, const cJSON *request)
{
	char error[256];
	bool up = worker_connect(worker, error, sizeof error);
	cJSON *answer = worker_answer(id);
	cJSON_AddStringToObject(answer, "name", worker->display_name);
	cJSON_AddBoolToObject(answer, "up", up);
	if (up) {
		cJSON_AddNumberToObject(answer, "width", screen_width(worker->screen));
		cJSON_AddNumberToObject(answer, "height", screen_height(worker->screen));
		cJSON_AddBoolToObject(answer, "shm", screen_grabber_uses_shm(worker->grabber));
	}
	cJSON_AddNumberToObject(answer, "shotsEncoded", (double)worker->shots.encodes);
	cJSON_AddNumberToObject(answer, "shotsCached", (double)worker->shots.hits);
	worker_send(worker, answer, NULL, 0);
}

static const struct worker_op worker_ops[] = {
	{"shot", true, op_shot},
	{"input", true, op_input},
	{"record_start", true, op_record_start},
	{"record_stop", false, op_record_stop},
	{"record_status", false, op_record_status},
	{"status", false, op_status},
	{"live_start", true, op_live_start},
	{"live_key", false, op_live_key},
	{"live_stop", false, op_live_stop},
	{"windows", true, op_windows},
	{"window_focus", true, op_window_focus},
	{"clipboard_get", true, op_clipboard_get},
	{"clipboard_set", true, op_clipboard_set},
	{"hold", false, op_hold},
};

const struct worker_op *worker_find_op(const char *name)
{
	for (size_t i = 0; i < sizeof worker_ops / sizeof worker_ops[0]; i++)
		if (strcmp(worker_ops[i].name, name) == 0)
			return &worker_ops[i];
	return NULL;
}
