/* screen-client.h: boxd's side of the screen worker (boxd-screen), and the
 * only speaker of its protocol (screen-protocol.h): typed calls go in, and
 * C values, or a failure with a sentence, come back through callbacks.
 *
 * The worker owns the X11 connection and the codecs; boxd links neither. It
 * is started at boxd's start when the display's server is there, else on
 * first use, and again on the next call after it exits (it exits when the X
 * server goes away, and when it has been unused for the idle time: boxd
 * closes its end then). All calls run on the event loop and never block it:
 * the socket to the worker is non-blocking and answers arrive as events.
 * Each call's callback runs exactly once: when the worker answers, or
 * before the call returns when the worker cannot be started. */
#ifndef BOXD_SCREEN_CLIENT_H
#define BOXD_SCREEN_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "failure.h"

struct event_base;

/* The worker is for `display` (":99", kept, not copied), its frames
 * exchanged on `base`. It exits after `idle_sec` seconds unused while nothing
 * records (0: never). */
void screen_client_init(struct event_base *base, const char *display, int idle_sec);

/* Starts the worker now, warming up, when the display's server is there
 * (its socket exists); else the first call starts it. After protect_init,
 * so that commands cannot signal it. */
void screen_client_start_ahead(void);

/* Why a call failed: the failure (its HTTP status is the router's
 * business) and a sentence for the caller. Valid during the callback. */
struct screen_failure {
	enum failure failure;
	const char *message;
};

/* ---- shots ---- */

/* A shot's parameters as the caller gave them, as text (NULL: the default;
 * docs/screen.md, "Screenshots"). The worker checks them once it knows the
 * display is up and its size: a wrong one fails with FAILURE_BAD_REQUEST
 * naming it. */
struct screen_shot_options {
	const char *format, *quality, *scale, *x, *y, *w, *h, *cursor;
};

struct screen_shot {
	int width, height;
	const char *content_type; /* "image/png" or "image/jpeg" */
	bool cached;              /* the last shot's bytes: nothing it shows changed */
	const void *data;         /* the encoded image */
	size_t length;
};

/* Exactly one of `shot` and `failed` is given; both valid during the call. */
typedef void (*screen_shot_done_fn)(void *arg, const struct screen_shot *shot,
				    const struct screen_failure *failed);
void screen_shot(const struct screen_shot_options *options, screen_shot_done_fn done, void *arg);

/* ---- input ---- */

/* `performed`: how many actions ran, all of them; 0 when `failed` (whose
 * sentence says where it stopped). */
typedef void (*screen_input_done_fn)(void *arg, int performed, const struct screen_failure *failed);
/* Performs `actions`, the API's array of actions (copied), in order. The
 * worker checks the whole list first: one wrong action fails the call with
 * FAILURE_BAD_REQUEST naming its index, and nothing was done. */
void screen_input(const cJSON *actions, screen_input_done_fn done, void *arg);

/* Runs once with the worker's answer: either {"ok":true,...} with an
 * optional payload (an image), or {"error":{"code","message"}}
 * (also made up by boxd when the worker cannot be reached). The answer and
 * payload are valid during the call only. */
typedef void (*screen_client_done_fn)(void *arg, const cJSON *answer, const void *payload,
				      size_t length);

/* Sends `request` ({"op":..., ...}; taken over, its "id" is set here) to the
 * worker, starting the worker if needed. `done` always runs exactly once: on
 * the loop when the answer comes, or before this returns when the worker
 * cannot be started. */
void screen_client_call(cJSON *request, screen_client_done_fn done, void *arg);

/* Told whenever the worker reports something by itself: a "display" change
 * or a "record_ended" (maxSec reached, an error), and {"event":"worker_exit"}
 * when the worker went away. One listener (api-screen.c). */
void screen_client_on_event(void (*listener)(const cJSON *event));

/* Told of the same events with their payload: the live view's fragments
 * ({"event":"live",...} with the MP4 bytes) and "worker_exit". One
 * listener (api-screen-live.c). */
typedef void (*screen_client_stream_fn)(const cJSON *event, const void *payload, size_t length);
void screen_client_on_stream(screen_client_stream_fn listener);

#endif
