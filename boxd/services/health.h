/* health.h: what `GET /v1/health` and the report stream say about the box.
 *
 * The display and Docker are probed without blocking the loop. A probe
 * result is served for HEALTH_PROBE_FRESH_MS, or until their sockets come or
 * go (inotify); after that the next answer waits for a new probe, so a
 * change shows in the very next answer. */
#ifndef BOXD_HEALTH_H
#define BOXD_HEALTH_H

#include <stdbool.h>

#include <cjson/cJSON.h>

struct event_base;

#define HEALTH_PROBE_FRESH_MS 2000
/* Starts the first probes. `work_dir` (the disk figures) and `display`
 * (":99") are kept, not copied. */
void health_init(struct event_base *base, const char *work_dir, const char *run_dir,
		 const char *display);
/* Answers callers still waiting for a probe, with what is known, and ends
 * the probes (at shutdown, before the server closes). */
void health_stop(void);

/* Builds the health object and hands it to `done` (which owns it). Only
 * before the first probe results exist does it wait for them; `done`
 * usually runs before health_collect returns. */
typedef void (*health_done_fn)(cJSON *health, void *arg);
void health_collect(health_done_fn done, void *arg);

/* A module that knows part of the answer (procs, recording, secrets,
 * display) registers a contributor; it runs on every build and may replace
 * the default fields. At most 16. */
void health_register(void (*contribute)(cJSON *health));
/* The same for the `activity` object, once activity.h's fields are in
 * (figures of one kind of use: the way in's open connections). At most 16. */
void health_register_activity(void (*contribute)(cJSON *activity));
/* The box's instanceId, from now on (init.c draws it). */
void health_set_instance_id(const char *id);

/* Forgets the probe results, so the next collect probes again (used when a
 * module learns the display or Docker changed). */
void health_invalidate(void);

#endif
