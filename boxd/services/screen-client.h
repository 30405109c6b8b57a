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

/* ---- recording ---- */

/* A recording's figures (docs/screen.md, "Recording"). Strings are valid
 * during the callback only. */
struct screen_record_figures {
	const char *path;
	int64_t bytes; /* of the file so far */
	/* The rest is known when the worker told it; not when the worker died
	 * mid-recording (boxd then knows only the file and why it ended). */
	bool measured;
	int64_t duration_ms, frames, dropped_frames;
	int fps, width, height;
	int64_t started_at;   /* ms since the epoch */
	const char *ended_by; /* "stop", "maxSec", "error", "display_lost"; NULL while running */
	const char *error;    /* why it ended, when by an error or the worker's end; else NULL */
};

/* Exactly one of `figures` and `failed` is given, except for
 * screen_record_status with nothing recording: neither. */
typedef void (*screen_record_done_fn)(void *arg, const struct screen_record_figures *figures,
				      const struct screen_failure *failed);
/* Starts recording into `path` (absolute). `fps` and `max_sec` as the
 * caller gave them (a number, or its digits as text; NULL or JSON null:
 * the default), checked by the worker. The figures come once the first
 * frame is in the file. */
void screen_record_start(const char *path, const cJSON *fps, const cJSON *max_sec,
			 screen_record_done_fn done, void *arg);
/* Stops the recording and finishes its file: its final figures;
 * FAILURE_CONFLICT when none runs. */
void screen_record_stop(screen_record_done_fn done, void *arg);
/* The figures so far of the recording running, if one is. */
void screen_record_status(screen_record_done_fn done, void *arg);

/* ---- the live screen ---- */

/* A live capture as it started (docs/screen.md, "The live screen"). */
struct screen_live_stream {
	int width, height;
	int64_t started_at; /* ms since the epoch of the stream's time 0 */
	const char *codec;  /* its RFC 6381 name, "avc1.PPCCLL"; NULL when none fit to send */
};

/* Exactly one of `stream` and `failed` is given; both valid during the call. */
typedef void (*screen_live_started_fn)(void *arg, const struct screen_live_stream *stream,
				       const struct screen_failure *failed);
/* Starts a capture that the caller numbers `live`, at most `fps` frames a
 * second, scaled by `scale`. Its init segment and first keyframe come as
 * reports (the listeners' `live`) before the answer. */
void screen_live_start(int live, int fps, double scale, screen_live_started_fn done, void *arg);
/* Asks capture `live` for a keyframe soon; its answer tells nothing. */
void screen_live_key(int live);
/* Stops capture `live` and frees what it holds in the worker. */
void screen_live_stop(int live);

enum screen_live_kind {
	SCREEN_LIVE_INIT,     /* the init segment (ftyp+moov) */
	SCREEN_LIVE_FRAGMENT, /* one frame: moof+mdat */
	SCREEN_LIVE_ENDED,    /* the capture ended by itself */
};

/* A piece of a capture's stream, fragmented MP4; valid during the call. */
struct screen_live_piece {
	int live;
	enum screen_live_kind kind;
	bool key;          /* a fragment that starts with a keyframe */
	const char *error; /* SCREEN_LIVE_ENDED: why, if said */
	const void *data;
	size_t length;
};

/* ---- windows ---- */

/* A top-level window (docs/screen.md, "Windows"): the client window an
 * application made, as a person would call it a window. */
struct screen_window {
	uint32_t id;            /* the X window id */
	const char *title;      /* UTF-8, "" when none; not masked yet */
	const char *class_name; /* WM_CLASS's class, "" when none */
	long pid;               /* _NET_WM_PID, -1 when not set */
	int x, y;               /* its top-left corner (outside its border), on the root */
	int width, height;      /* inside the border */
	bool focused, visible;
};

/* Exactly one of `windows` (`count` of them, bottom to top; none is an
 * empty display) and `failed` is given; valid during the call. */
typedef void (*screen_windows_done_fn)(void *arg, const struct screen_window *windows, size_t count,
				       const struct screen_failure *failed);
/* Lists the display's top-level windows, top-most last. */
void screen_windows(screen_windows_done_fn done, void *arg);

/* Exactly one of `window` (its entry afterwards, focused) and `failed`. */
typedef void (*screen_window_focus_done_fn)(void *arg, const struct screen_window *window,
					    const struct screen_failure *failed);
/* Raises window `id` and gives it the input focus. FAILURE_NOT_FOUND when
 * it is not a listed window; FAILURE_CONFLICT when it is not shown and
 * nothing can show it. */
void screen_window_focus(uint32_t id, screen_window_focus_done_fn done, void *arg);
/* ---- the clipboard ---- */

/* What a selection holds (docs/screen.md, "Clipboard"). */
enum screen_clipboard_kind {
	SCREEN_CLIPBOARD_TEXT,  /* UTF-8 as the owner gave it (not checked, not masked) */
	SCREEN_CLIPBOARD_IMAGE, /* a PNG */
	SCREEN_CLIPBOARD_EMPTY, /* nobody owns the selection */
	SCREEN_CLIPBOARD_OTHER, /* its owner offers neither text nor a PNG */
};

struct screen_clipboard {
	enum screen_clipboard_kind kind;
	const char *targets; /* OTHER: the owner's targets, comma-separated; else NULL */
	const void *data;    /* TEXT and IMAGE: the value */
	size_t length;
};

/* Exactly one of `content` and `failed` is given; both valid during the call. */
typedef void (*screen_clipboard_done_fn)(void *arg, const struct screen_clipboard *content,
					 const struct screen_failure *failed);
/* Reads `selection` ("clipboard" or "primary"; another name fails with
 * FAILURE_BAD_REQUEST): boxd's own value while it owns it, else asked of
 * its owner, who has 2 s to answer (FAILURE_TIMEOUT). */
void screen_clipboard_get(const char *selection, screen_clipboard_done_fn done, void *arg);
/* `failed` is NULL on success. */
typedef void (*screen_clipboard_set_fn)(void *arg, const struct screen_failure *failed);
/* Makes the worker own `selection` with `data` (copied): text (UTF-8, the
 * caller checked) or, when `image`, a PNG. It serves every program that
 * pastes it until another takes the selection, and does not retire
 * meanwhile; it loses it when it exits anyway (the X server went away). */
void screen_clipboard_set(const char *selection, bool image, const void *data, size_t length,
			  screen_clipboard_set_fn done, void *arg);

/* While held, a worker runs whenever it can: it is started now (and again
 * a second after it exits, say when the X server went and a new one will
 * come), and never retired for idleness, so that the listeners hear of
 * every clipboard change meanwhile (the lock holds it during a takeover,
 * when the person copies and nothing else would keep the worker). Released,
 * the worker's quiet time starts and it retires as usual. */
void screen_client_hold(bool hold);

/* ---- what the worker reports by itself ---- */

/* Each listener (NULL members are skipped) hears every report. Display
 * changes are the client's own business: they make health probe afresh. */
struct screen_client_listener {
	/* A recording ended by itself (maxSec reached, an error). */
	void (*record_ended)(const struct screen_record_figures *figures);
	/* A live capture's piece. */
	void (*live)(const struct screen_live_piece *piece);
	/* The worker went away (`why` says how); the calls still waiting
	 * fail right after this. */
	void (*worker_exit)(const char *why);
	/* The owner of a selection ("clipboard" or "primary") changed: another
	 * program took it, its owner went away, or boxd's own set took it.
	 * Heard only while a worker runs (screen_client_hold keeps one). */
	void (*clipboard_changed)(const char *selection);
};
/* `listener` is kept, not copied. At most SCREEN_CLIENT_LISTENERS. */
#define SCREEN_CLIENT_LISTENERS 4
void screen_client_listen(const struct screen_client_listener *listener);

#endif
