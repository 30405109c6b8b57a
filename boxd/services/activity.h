/* activity.h: whether the box is in use, and why (health's `activity`).
 *
 * The control plane freezes a box it believes idle; a freeze in the middle
 * of work cuts it, and a box kept awake for nothing is billed for nothing.
 * So every kind of use that boxd can see is one reason, turned on and off by
 * the module that sees it, at the moment it begins and ends: nothing here
 * polls, and an idle box costs no CPU to say so. State kept on another thread
 * (the relay's open connections) or derived from time (a background command
 * counts for its first hour) is read from a source at each answer instead.
 *
 * All functions run on the loop thread. */
#ifndef BOXD_ACTIVITY_H
#define BOXD_ACTIVITY_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* The contract's reasons (API.md, "Health"), in the order they are listed. */
enum activity_reason {
	ACTIVITY_CALL,       /* an API call in flight (health excepted) */
	ACTIVITY_STREAM,     /* a streamed answer: exec's NDJSON, a download */
	ACTIVITY_UPLOAD,     /* an upload's body coming in, or being extracted */
	ACTIVITY_LIVE_VIEW,  /* someone watching the screen */
	ACTIVITY_RECORDING,  /* the screen being recorded */
	ACTIVITY_TERMINAL,   /* an attached terminal */
	ACTIVITY_INGRESS,    /* a connection open through the way in */
	ACTIVITY_BACKGROUND, /* a background command started less than an hour ago */
	ACTIVITY_LOCK,       /* a person has the screen */
	ACTIVITY_REASON_COUNT
};

/* The box may be frozen this long after the last use... */
#define ACTIVITY_KEEP_AWAKE_MS (10 * 60 * 1000)
/* ...and this long after the last call while a background command runs; a
 * background command counts as use for this long after its start. */
#define ACTIVITY_BACKGROUND_MS (60 * 60 * 1000)

/* From boxd's start, which counts as a call. */
void activity_init(void);

/* One more (or one fewer) of `reason` under way. Ends never go below zero. */
void activity_begin(enum activity_reason reason);
void activity_end(enum activity_reason reason);

/* A reason whose state another part keeps: `active` says whether it is in
 * use now and sets *last_ms to when it last was (ms since the epoch, 0 for
 * never). At most one source per reason. */
typedef bool (*activity_source_fn)(int64_t now_ms, int64_t *last_ms);
void activity_register_source(enum activity_reason reason, activity_source_fn active);

/* Writes the `activity` object's fields: lastCallAt, keepAwakeUntil,
 * callsInFlight, busy, reasons and idleSince (null while busy: the box is
 * not idle). `background_running`: a background command runs, of any age
 * (the calls then keep the box awake for an hour, not ten minutes). */
void activity_describe(cJSON *activity, bool background_running);

#endif
