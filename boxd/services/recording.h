/* recording.h: the screen recording as boxd keeps it: one at a time, its id
 * and file (WORK/.sbx/recordings/r_<id>.mp4), the figures of one that ended
 * by itself (maxSec, an error, the worker gone) kept until a stop collects
 * them, health's `recording` field, and the steps. The worker records
 * (screen-client.h); this is the state around it. Loop thread only.
 *
 * Each call's callback runs exactly once, possibly before the call returns
 * (a refusal, or a worker that cannot be started). */
#ifndef BOXD_RECORDING_H
#define BOXD_RECORDING_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "screen-client.h"

/* Recordings go under `work_dir` (kept, not copied). Contributes health's
 * `recording` and follows the worker's reports. Once, at boxd's start. */
void recording_init(const char *work_dir);

struct recording_started {
	const char *id;     /* "r_..." */
	const char *path;   /* the file */
	int64_t started_at; /* ms since the epoch */
	int fps, width, height;
};

/* Exactly one of `started` and `failed` is given, valid during the call. */
typedef void (*recording_started_fn)(void *arg, const struct recording_started *started,
				     const struct screen_failure *failed);
/* Starts a recording; `fps` and `max_sec` as the caller gave them
 * (screen_record_start). Answers once its first frame is in the file.
 * FAILURE_CONFLICT while one runs or starts; FAILURE_INTERNAL when its
 * directory cannot be made. */
void recording_start(const cJSON *fps, const cJSON *max_sec, recording_started_fn done, void *arg);

/* A recording's `id` and `figures`, or `failed`; valid during the call. */
typedef void (*recording_figures_fn)(void *arg, const char *id,
				     const struct screen_record_figures *figures,
				     const struct screen_failure *failed);
/* Stops the recording: its final figures; or, first, the figures of one
 * that ended by itself since the last stop (once). FAILURE_CONFLICT when
 * there is neither, and while one is starting or stopping. */
void recording_stop(recording_figures_fn done, void *arg);
/* The figures so far of the recording running; when none runs, neither
 * figures nor a failure. */
void recording_status(recording_figures_fn done, void *arg);

#endif
