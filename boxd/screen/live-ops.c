/* live-ops.c: the worker's live-screen requests (live_start, live_key,
 * live_stop) and its part in the main loop. The capture itself is live.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "av-lazy.h"
#include "live.h"
#include "screen-worker.h"

/* The live thread's fragments go to boxd as events, through the same
 * (locked) frame writer as the main thread's answers. */
static void worker_live_emit(void *arg, cJSON *event, const void *payload, size_t length)
{
	worker_send(arg, event, payload, length);
}

static struct live **worker_live_find(struct worker *worker, int id)
{
	for (int i = 0; i < LIVE_MAX_PIPES; i++)
		if (worker->lives[i] && live_id(worker->lives[i]) == id)
			return &worker->lives[i];
	return NULL;
}

void op_live_start(struct worker *worker, double id, const cJSON *request)
{
	long live_number, fps;
	double scale;
	if (!worker_integer(request, "live", -1, 0, 1L << 30, &live_number)) {
		worker_error(worker, id, FAILURE_BAD_REQUEST, "live_start needs a live id");
		return;
	}
	if (!worker_integer(request, "fps", LIVE_DEFAULT_FPS, LIVE_MIN_FPS, LIVE_MAX_FPS, &fps)) {
		worker_error(worker, id, FAILURE_BAD_REQUEST,
			     "fps must be an integer from %d to %d", LIVE_MIN_FPS, LIVE_MAX_FPS);
		return;
	}
	if (!worker_number(request, "scale", 1, &scale) || !(scale > 0) || scale > LIVE_MAX_SCALE) {
		worker_error(worker, id, FAILURE_BAD_REQUEST,
			     "scale must be a number above 0 and at most 1");
		return;
	}
	int screen_w = screen_width(worker->screen), screen_h = screen_height(worker->screen);
	if (lround(screen_w * scale) < LIVE_MIN_SIDE || lround(screen_h * scale) < LIVE_MIN_SIDE) {
		worker_error(worker, id, FAILURE_BAD_REQUEST,
			     "scale %g makes the %dx%d screen smaller than %d pixels a side", scale,
			     screen_w, screen_h, LIVE_MIN_SIDE);
		return;
	}
	if (worker_live_find(worker, (int)live_number)) {
		worker_error(worker, id, FAILURE_CONFLICT, "live view %ld already runs",
			     live_number);
		return;
	}
	struct live **slot = NULL;
	for (int i = 0; i < LIVE_MAX_PIPES && !slot; i++)
		if (!worker->lives[i])
			slot = &worker->lives[i];
	if (!slot) {
		worker_error(worker, id, FAILURE_CONFLICT,
			     "%d live views with other settings already run; watch with the fps "
			     "and scale of one of them",
			     LIVE_MAX_PIPES);
		return;
	}
	char error[256];
	/* libavcodec and libavformat are loaded by the first live view (or
	 * recording, or JPEG), not at the worker's start. */
	if (!av_lazy_load(error, sizeof error)) {
		worker_error(worker, id, FAILURE_INTERNAL, "cannot start the live view: %s", error);
		return;
	}
	cJSON *answer = worker_answer(id);
	cJSON_AddNumberToObject(answer, "live", (double)live_number);
	*slot = live_start(worker->screen, (int)live_number, (int)fps, scale, worker_live_emit,
			   worker, answer, error, sizeof error);
	if (!*slot) {
		cJSON_Delete(answer);
		worker_error(worker, id, FAILURE_INTERNAL, "cannot start the live view: %s", error);
		return;
	}
	worker_send(worker, answer, NULL, 0);
}

/* The live view a request names, or NULL once it has answered 404. */
static struct live **live_of_request(struct worker *worker, double id, const cJSON *request)
{
	long live_number;
	struct live **live = worker_integer(request, "live", -1, 0, 1L << 30, &live_number)
				     ? worker_live_find(worker, (int)live_number)
				     : NULL;
	if (!live)
		worker_error(worker, id, FAILURE_NOT_FOUND, "no such live view");
	return live;
}

void op_live_key(struct worker *worker, double id, const cJSON *request)
{
	struct live **live = live_of_request(worker, id, request);
	if (!live)
		return;
	live_want_keyframe(*live);
	worker_send(worker, worker_answer(id), NULL, 0);
}

void op_live_stop(struct worker *worker, double id, const cJSON *request)
{
	struct live **live = live_of_request(worker, id, request);
	if (!live)
		return;
	live_stop(*live);
	*live = NULL;
	worker_send(worker, worker_answer(id), NULL, 0);
}

bool worker_live_watched(const struct worker *worker)
{
	for (int i = 0; i < LIVE_MAX_PIPES; i++)
		if (worker->lives[i])
			return true;
	return false;
}

void worker_live_main_busy(struct worker *worker, bool busy)
{
	/* The recording thread's grabs read X events off the connection too. */
	for (int i = 0; i < LIVE_MAX_PIPES; i++)
		if (worker->lives[i])
			live_main_busy(worker->lives[i], busy || worker->record);
}

void worker_live_poke(struct worker *worker)
{
	for (int i = 0; i < LIVE_MAX_PIPES; i++)
		if (worker->lives[i])
			live_poke(worker->lives[i]);
}

void worker_live_stop_all(struct worker *worker)
{
	for (int i = 0; i < LIVE_MAX_PIPES; i++) {
		if (worker->lives[i])
			live_stop(worker->lives[i]);
		worker->lives[i] = NULL;
	}
}
