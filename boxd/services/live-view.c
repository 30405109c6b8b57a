/* live-view.c: the live screen's captures ("pipes", one per set of
 * settings) and their viewers, fed from the worker's reports (live-view.h). */
#include "live-view.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "screen-client.h"
#include "xalloc.h"

/* A viewer that skipped asks for a keyframe at most this often. */
#define LIVE_CATCH_UP_KEY_GAP_MS 2000

struct live_pipe {
	int id;
	int fps;
	double scale;
	bool running; /* the worker answered live_start */
	struct screen_live_stream stream;
	char codec[20]; /* stream.codec's text */
	uint8_t *init;  /* the init segment (ftyp+moov) */
	size_t init_length;
	uint8_t *first_key; /* the first keyframe, until the start answer */
	size_t first_key_length;
	struct live_viewer *viewers;
	int64_t last_catch_up_ms;
	struct live_pipe *next;
};

struct live_viewer {
	const struct live_viewer_ops *ops;
	void *arg;
	struct live_pipe *pipe;
	bool streaming; /* begun: the init segment is written */
	bool want_key;  /* skipping until a keyframe */
	int64_t fragments, skipped;
	struct live_viewer *next;
};

static struct live_pipe *pipes;
static int last_pipe_id;

static uint8_t *live_copy(const void *data, size_t length)
{
	uint8_t *copy = xmalloc(length ? length : 1);
	memcpy(copy, data, length);
	return copy;
}

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
	screen_live_stop(pipe->id);
	live_pipe_free(pipe);
}

void live_view_leave(struct live_viewer *viewer)
{
	struct live_pipe *pipe = viewer->pipe;
	live_viewer_unlink(viewer);
	free(viewer);
	live_pipe_check_empty(pipe);
}

/* Starts the stream: the head, the init segment, and (for the first
 * viewers) the first keyframe; later viewers wait for a keyframe asked for
 * now. */
static void live_viewer_begin(struct live_viewer *viewer)
{
	struct live_pipe *pipe = viewer->pipe;
	viewer->ops->begin(viewer->arg, &pipe->stream);
	viewer->streaming = true;
	viewer->ops->write(viewer->arg, pipe->init, pipe->init_length);
	if (pipe->first_key) {
		viewer->ops->write(viewer->arg, pipe->first_key, pipe->first_key_length);
		viewer->fragments++;
	} else {
		viewer->want_key = true;
		screen_live_key(pipe->id);
	}
}

/* A viewer that skipped has taken what it had: it asks for a keyframe to
 * go on from (not more often than LIVE_CATCH_UP_KEY_GAP_MS a pipe, so one
 * slow viewer cannot fill everyone's stream with keyframes). */
void live_view_drained(struct live_viewer *viewer)
{
	struct live_pipe *pipe = viewer->pipe;
	if (!viewer->want_key || !pipe->running || viewer->ops->pending(viewer->arg) > 0)
		return;
	int64_t now = clock_monotonic_ms();
	if (now - pipe->last_catch_up_ms < LIVE_CATCH_UP_KEY_GAP_MS)
		return;
	pipe->last_catch_up_ms = now;
	screen_live_key(pipe->id);
}

static void live_fan_out(struct live_pipe *pipe, bool key, const void *data, size_t length)
{
	for (struct live_viewer *viewer = pipe->viewers; viewer; viewer = viewer->next) {
		if (!viewer->streaming)
			continue;
		if (viewer->ops->pending(viewer->arg) > LIVE_VIEW_MAX_PENDING) {
			if (!viewer->want_key)
				log_msg(LOG_LEVEL_DEBUG,
					"live view %d: a viewer is behind; it skips to the next "
					"keyframe",
					pipe->id);
			viewer->want_key = true;
		}
		if (viewer->want_key && !key) {
			viewer->skipped++;
			continue;
		}
		viewer->want_key = false;
		viewer->fragments++;
		viewer->ops->write(viewer->arg, data, length);
	}
}

/* Every viewer's stream ends (the pipe ended, the worker went away). */
static void live_pipe_end(struct live_pipe *pipe, const char *why)
{
	log_msg(LOG_LEVEL_INFO, "live view %d ended: %s", pipe->id, why);
	while (pipe->viewers) {
		struct live_viewer *viewer = pipe->viewers;
		pipe->viewers = viewer->next;
		if (viewer->streaming)
			viewer->ops->end(viewer->arg);
		else
			viewer->ops->fail(viewer->arg, FAILURE_DISPLAY_UNAVAILABLE, why);
		free(viewer);
	}
	live_pipe_free(pipe);
}

/* ---- the worker's reports ---- */

static void live_on_worker_exit(const char *why)
{
	/* Running pipes end here; a starting one gets its live_start answered
	 * with the worker's end right after this, and ends there. */
	struct live_pipe *pipe = pipes;
	while (pipe) {
		struct live_pipe *next = pipe->next;
		if (pipe->running)
			live_pipe_end(pipe, why ? why : "the screen worker stopped");
		pipe = next;
	}
}

static void live_on_piece(const struct screen_live_piece *piece)
{
	struct live_pipe *pipe = live_pipe_find(piece->live);
	if (!pipe)
		return; /* a pipe stopped meanwhile */
	if (piece->kind == SCREEN_LIVE_INIT && !pipe->init) {
		pipe->init = live_copy(piece->data, piece->length);
		pipe->init_length = piece->length;
	} else if (piece->kind == SCREEN_LIVE_FRAGMENT && !pipe->running) {
		if (piece->key && !pipe->first_key) {
			pipe->first_key = live_copy(piece->data, piece->length);
			pipe->first_key_length = piece->length;
		}
	} else if (piece->kind == SCREEN_LIVE_FRAGMENT) {
		live_fan_out(pipe, piece->key, piece->data, piece->length);
	} else if (piece->kind == SCREEN_LIVE_ENDED) {
		screen_live_stop(pipe->id);
		live_pipe_end(pipe, piece->error ? piece->error : "the live view stopped");
	}
}

/* `arg` is the pipe's id: a capture that ended by itself before its start
 * was answered is gone by then. */
static void live_on_started(void *arg, const struct screen_live_stream *stream,
			    const struct screen_failure *failed)
{
	struct live_pipe *pipe = live_pipe_find((int)(intptr_t)arg);
	if (!pipe)
		return;
	if (failed || !pipe->init) {
		/* Started without its init segment: nothing a viewer could play. */
		static const struct screen_failure no_init = {FAILURE_INTERNAL,
							      "the live view did not start"};
		const struct screen_failure *why = failed ? failed : &no_init;
		while (pipe->viewers) {
			struct live_viewer *viewer = pipe->viewers;
			pipe->viewers = viewer->next;
			viewer->ops->fail(viewer->arg, why->failure, why->message);
			free(viewer);
		}
		if (!failed)
			screen_live_stop(pipe->id);
		live_pipe_free(pipe);
		return;
	}
	pipe->running = true;
	pipe->stream = *stream;
	if (stream->codec)
		snprintf(pipe->codec, sizeof pipe->codec, "%s", stream->codec);
	pipe->stream.codec = stream->codec ? pipe->codec : NULL;
	log_msg(LOG_LEVEL_INFO, "live view %d started: %dx%d at up to %d fps", pipe->id,
		stream->width, stream->height, pipe->fps);
	for (struct live_viewer *viewer = pipe->viewers; viewer; viewer = viewer->next)
		live_viewer_begin(viewer);
	free(pipe->first_key);
	pipe->first_key = NULL;
	live_pipe_check_empty(pipe);
}

/* ---- joining ---- */

struct live_viewer *live_view_join(int fps, double scale, const struct live_viewer_ops *ops,
				   void *arg)
{
	static bool listening;
	static const struct screen_client_listener listener = {
		.live = live_on_piece,
		.worker_exit = live_on_worker_exit,
	};
	if (!listening) {
		screen_client_listen(&listener);
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
	viewer->ops = ops;
	viewer->arg = arg;
	viewer->pipe = pipe;
	viewer->next = pipe->viewers;
	pipe->viewers = viewer;
	if (pipe->running)
		live_viewer_begin(viewer);
	if (new_pipe) {
		int id = pipe->id;
		screen_live_start(id, fps, scale, live_on_started, (void *)(intptr_t)id);
		/* Answered at once when the worker could not start: the pipe is
		 * gone, and the viewer with it. */
		if (!live_pipe_find(id))
			return NULL;
	}
	return viewer;
}
