/* api-screen-live.c: GET /v1/screen/live, the live screen as fragmented MP4
 * in a chunked answer. The viewers and their captures are live-view.h's;
 * here a request becomes a viewer: its parameters, its answer's head and
 * stream, and its leaving. */
#include "api-screen-live.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router.h"
#include "live-view.h"
#include "xalloc.h"

#define LIVE_DEFAULT_FPS 30
#define LIVE_MAX_FPS 60

/* A request's part in the live view (its api_data). */
struct live_request {
	struct live_viewer *viewer; /* NULL once it left the live view */
	bool streaming;             /* the answer has started */
};

static void live_on_drained(struct api_request *req)
{
	struct live_request *live = api_data(req);
	if (live->viewer)
		live_view_drained(live->viewer);
}

/* ---- the live view's side of a viewer ---- */

static void live_begin(void *arg, const struct screen_live_stream *stream)
{
	struct api_request *req = arg;
	char width[16], height[16], started_at[24], type[64];
	snprintf(width, sizeof width, "%d", stream->width);
	snprintf(height, sizeof height, "%d", stream->height);
	snprintf(started_at, sizeof started_at, "%" PRId64, stream->started_at);
	/* What MediaSource.addSourceBuffer wants to be told. */
	if (stream->codec)
		snprintf(type, sizeof type, "video/mp4; codecs=\"%s\"", stream->codec);
	else
		snprintf(type, sizeof type, "video/mp4");
	api_add_header(req, "X-Width", width);
	api_add_header(req, "X-Height", height);
	api_add_header(req, "X-Started-At", started_at);
	api_add_header(req, "Cache-Control", "no-store");
	api_stream_start(req, 200, type, live_on_drained);
	((struct live_request *)api_data(req))->streaming = true;
}

static void live_write(void *arg, const void *data, size_t length)
{
	api_stream_write(arg, data, length);
}

static size_t live_pending(void *arg)
{
	return api_stream_pending(arg);
}

static void live_end(void *arg)
{
	struct api_request *req = arg;
	((struct live_request *)api_data(req))->viewer = NULL;
	api_on_client_gone(req, NULL);
	api_stream_end(req);
}

static void live_fail(void *arg, enum failure failure, const char *message)
{
	struct api_request *req = arg;
	((struct live_request *)api_data(req))->viewer = NULL;
	api_on_client_gone(req, NULL);
	api_reply_failure(req, failure, "%s", message);
}

static const struct live_viewer_ops live_ops = {
	.begin = live_begin,
	.write = live_write,
	.pending = live_pending,
	.end = live_end,
	.fail = live_fail,
};

/* The client went away: its answer ends (unheard), then it leaves the
 * live view, the last viewer stopping the capture. */
static void live_gone(struct api_request *req)
{
	struct live_request *live = api_data(req);
	struct live_viewer *viewer = live->viewer;
	if (live->streaming)
		api_stream_end(req);
	else
		api_reply_failure(req, FAILURE_UNAVAILABLE, "the viewer left");
	/* `live` went with the request. */
	if (viewer)
		live_view_leave(viewer);
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
			api_reply_bad_request(req, "fps must be an integer from 1 to %d",
					      LIVE_MAX_FPS);
			return false;
		}
		*fps = (int)value;
	}
	if (scale_text) {
		char *end;
		errno = 0;
		double value = strtod(scale_text, &end);
		if (!scale_text[0] || scale_text[strspn(scale_text, "0123456789.")] || *end ||
		    errno || !(value > 0) || value > 1) {
			api_reply_bad_request(req, "scale must be a number above 0 and at most 1");
			return false;
		}
		*scale = value;
	}
	return true;
}

void api_screen_live(struct api_request *req)
{
	int fps;
	double scale;
	if (!live_parse(req, &fps, &scale))
		return;
	struct live_request *live = xcalloc(1, sizeof *live);
	api_set_data(req, live, free);
	api_on_client_gone(req, live_gone);
	struct live_viewer *viewer = live_view_join(fps, scale, &live_ops, req);
	/* NULL: answered already (the request and `live` are gone). */
	if (viewer)
		live->viewer = viewer;
}
