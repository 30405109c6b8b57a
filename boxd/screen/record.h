/* record.h: screen recording to H.264 in fragmented MP4, on its own thread.
 *
 * The recording thread grabs the screen through the worker's one X
 * connection (its own grabber), at a constant wall-clock rate: frame N is
 * shown at N/fps seconds. A late grab moves to the slot it falls in and the
 * skipped slots count as dropped. An unchanged screen is compared, not
 * encoded: the previous frame lasts longer (coded again once a second), so
 * a still screen costs little. Fragments are cut every second, so a file whose writer is killed
 * still plays up to its last second. */
#ifndef BOXD_RECORD_H
#define BOXD_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "screen.h"

#define RECORD_MAX_FPS 60
#define RECORD_MAX_SECONDS (4 * 3600)

struct record;

struct record_stats {
	const char *path;
	int width, height, fps;
	int64_t started_at; /* ms since the epoch */
	int64_t bytes;      /* of the file so far */
	int64_t duration_ms;
	int64_t frames;       /* coded in the file (a still screen: one a second) */
	int64_t dropped;      /* slots missed because a grab came late */
	const char *ended_by; /* "stop", "maxSec", "error"; NULL while running */
	char error[256];      /* why it ended, when ended_by is "error" */
};

/* Opens `path`, grabs and encodes the first frame, then starts the thread.
 * Returns NULL with a sentence in `error` when any of that fails (and
 * removes the file). `wake_fd` (an eventfd) is written once when the
 * recording ends by itself (maxSec, an error). */
struct record *record_start(struct screen *screen, const char *path, int fps, int max_seconds,
			    int wake_fd, char *error, size_t error_size);
/* True once the thread ended by itself. */
bool record_ended(struct record *record);
/* A snapshot of the figures so far. Strings stay owned by `record`. */
void record_progress(struct record *record, struct record_stats *stats);
/* Stops the thread (if still running), finishes the file, fills `stats`
 * (strings copied into `stats`' storage: path is malloc'd, caller frees) and
 * frees `record`. */
void record_finish(struct record *record, struct record_stats *stats);

#endif
