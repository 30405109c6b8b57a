/* live.h: the live screen in the worker: one capture and one H.264 encoder
 * per set of settings (fps, scale), on its own thread, muxed to fragmented
 * MP4 (libavformat's mp4 muxer into memory) and handed out fragment by
 * fragment. boxd fans the fragments out to its viewers (live-view.c).
 *
 * Damage-driven: the thread sleeps until the X connection has something to
 * say (or boxd asks for a keyframe), reads the damage generation, and grabs
 * and encodes only when the screen changed, at most `fps` times a second.
 * A still screen costs no grab, no encode and no byte. Every frame is its
 * own fragment, sent at once; the timeline is the wall clock's and has no
 * holes (see live.c, "Timestamps"). */
#ifndef BOXD_LIVE_H
#define BOXD_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "screen.h"

#define LIVE_MIN_FPS 1
#define LIVE_MAX_FPS 60
#define LIVE_DEFAULT_FPS 30
/* scale: above 0 and at most 1 (a live view is never larger than the screen);
 * the picture is at least LIVE_MIN_SIDE pixels on each side. */
#define LIVE_MAX_SCALE 1.0
#define LIVE_MIN_SIDE 16
/* Distinct settings running at once (each its own capture and encoder). */
#define LIVE_MAX_PIPES 4
/* A keyframe at least every this many coded frames' worth of seconds... */
#define LIVE_KEYFRAME_SECONDS 4
/* ...and a forced one (a new viewer) no sooner than this after the last. */
#define LIVE_KEY_MIN_GAP_MS 500

struct live;

/* How the thread hands out what it made: {"event":"live","live":id,...}
 * with the bytes as payload. Called from the live thread (and from
 * live_start's caller for the first ones); must be thread-safe. Takes
 * `event`. */
typedef void (*live_emit_fn)(void *arg, cJSON *event, const void *payload, size_t length);

/* Grabs and encodes the first frame, emits the init segment ("init") and
 * the first keyframe ("fragment"), then starts the thread. `figures` gets
 * width, height, fps, scale, startedAt. NULL with a sentence in `error`. */
struct live *live_start(struct screen *screen, int id, int fps, double scale, live_emit_fn emit,
			void *arg, cJSON *figures, char *error, size_t error_size);
int live_id(const struct live *live);
/* Codes a keyframe soon (a new viewer, or one that skipped): at once, or
 * LIVE_KEY_MIN_GAP_MS after the last keyframe, whichever is later. */
void live_want_keyframe(struct live *live);
/* Whether other threads are using the X connection (the main thread inside
 * a request, a recording): they may read damage events off it that the
 * live thread's poll never sees, so meanwhile the live thread reads the
 * damage generation every LIVE_BUSY_CHECK_MS as well. */
void live_main_busy(struct live *live, bool busy);
/* Another thread handled damage: look at the generation now. */
void live_poke(struct live *live);
/* Stops the thread and frees everything. */
void live_stop(struct live *live);

#endif
