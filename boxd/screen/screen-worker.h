/* screen-worker.h: the state of boxd-screen and what its parts offer each
 * other: the main loop (screen-worker.c) runs requests (screen-requests.c),
 * both answer through screen-reply.c and reach the display through
 * screen-display.c, which need neither. Internal to boxd-screen. */
#ifndef BOXD_SCREEN_WORKER_H
#define BOXD_SCREEN_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "clipboard.h"
#include "failure.h"
#include "live.h"
#include "screen.h"
#include "shot-cache.h"

struct worker {
	const char *display_name;
	int fd;                /* the socketpair end */
	struct screen *screen; /* NULL while the display is down */
	struct screen_grabber *grabber;
	struct screen_encoder *encoder;
	struct shot_cache shots; /* the last shot's encoding */
	struct input *input;
	struct windows *windows; /* the windows listing's atoms (windows.h) */
	struct record *record;
	int wake_fd;                        /* eventfd: the recording ended by itself */
	int watch_fd;                       /* inotify on the X socket directory, while down */
	int announced;                      /* display state last told to boxd: -1, 0, 1 */
	struct live *lives[LIVE_MAX_PIPES]; /* live views (live.c), NULL: free */
	/* Quiet this long (no request, nothing recording), the worker tells
	 * boxd it is idle; boxd then closes its end and the worker exits.
	 * 0: never. */
	int64_t idle_ms;
	int64_t quiet_since_ms;
	bool idle_told;
	/* The selections (clipboard.c), made with the connection. */
	struct clipboard *clipboard;
	/* boxd holds the worker (op hold): it does not retire meanwhile. */
	bool held;
	/* The payload of the request being run (clipboard_set's value). */
	const void *payload;
	size_t payload_length;
};

/* screen-reply.c */
/* Sends a frame (takes `json`). Thread-safe: live threads send through it. */
void worker_send(struct worker *worker, cJSON *json, const void *payload, size_t length);
/* {"id": id, "ok": true}, to add fields to and send. */
cJSON *worker_answer(double id);
/* Answers request `id` with what went wrong: {"id": id, "error": {"code",
 * "message"}}, the code being the failure's (failure_code). The worker
 * names no HTTP status: boxd maps the failure to one (http-errors.c). */
void worker_error(struct worker *worker, double id, enum failure failure, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* screen-display.c */
/* Connects to the display unless connected; false with why in `error`. */
bool worker_connect(struct worker *worker, char *error, size_t error_size);
/* watch_fd is readable: connects if the display's socket has appeared. */
void worker_on_watch(struct worker *worker);
/* A request member as a number (JSON number or numeric text); absent gives
 * `fallback`. False when malformed. */
bool worker_number(const cJSON *request, const char *name, double fallback, double *value);
bool worker_integer(const cJSON *request, const char *name, long fallback, long minimum,
		    long maximum, long *value);

/* screen-requests.c */
struct worker_op {
	const char *name;
	bool needs_display;
	void (*run)(struct worker *worker, double id, const cJSON *request);
};
const struct worker_op *worker_find_op(const char *name);

/* Takes a full-screen PNG with the cursor (the default shot) into the shot
 * cache without answering: pages in the grab and encoder paths and keeps the
 * result, so boxd's first shot is quick. */
void worker_warm_up(struct worker *worker);

/* The recording thread signalled its end: finish it and tell boxd. */
void worker_on_record_wake(struct worker *worker);
/* Finishes a running recording (at exit), telling boxd when `tell`. */
void worker_stop_recording(struct worker *worker, bool tell);

/* clipboard-ops.c: the clipboard's requests, and `hold`. */
/* Sets up the selections once connected; their owner changes become events. */
void worker_clipboard_start(struct worker *worker);
void op_clipboard_get(struct worker *worker, double id, const cJSON *request);
void op_clipboard_set(struct worker *worker, double id, const cJSON *request);
void op_hold(struct worker *worker, double id, const cJSON *request);

/* live-ops.c: the live view's requests and its hooks in the main loop. */
void op_live_start(struct worker *worker, double id, const cJSON *request);
void op_live_key(struct worker *worker, double id, const cJSON *request);
void op_live_stop(struct worker *worker, double id, const cJSON *request);
/* True while someone watches the live view: the worker is in use, however
 * long no request comes (an idle exit must wait for this to be false). */
bool worker_live_watched(const struct worker *worker);
/* Around each request: while the main thread works (or a recording runs)
 * X events may be read off the connection by another thread, unseen by a
 * live thread's poll: the live threads then look for damage every 50 ms. */
void worker_live_main_busy(struct worker *worker, bool busy);
/* The main thread handled damage: live threads look at it. */
void worker_live_poke(struct worker *worker);
/* At exit. */
void worker_live_stop_all(struct worker *worker);

/* windows-ops.c: the top-level windows (windows.h). */
void op_windows(struct worker *worker, double id, const cJSON *request);
void op_window_focus(struct worker *worker, double id, const cJSON *request);

#endif
