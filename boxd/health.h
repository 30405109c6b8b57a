/* health.h: what `GET /v1/health` and the report stream say about the box.
 *
 * The display and Docker are probed without blocking the loop; a probe
 * result is reused for PROBE_FRESH_MS so a caller polling health does not
 * make boxd knock on the X server for every call. */
#ifndef BOXD_HEALTH_H
#define BOXD_HEALTH_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#define HEALTH_PROBE_FRESH_MS 2000

void health_init(void);

/* Builds the health object and hands it to `done` (which owns it), after
 * refreshing stale probes. `done` may run before health_collect returns. */
typedef void (*health_done_fn)(cJSON *health, void *arg);
void health_collect(health_done_fn done, void *arg);

/* A module that knows part of the answer (procs, recording, secrets,
 * display) registers a contributor; it runs on every build and may replace
 * the default fields. At most 16. */
void health_register(void (*contribute)(cJSON *health));

/* Records an API call for activity.lastCallAt (the router calls it). */
void health_note_call(void);

/* Forgets the probe results, so the next collect probes again (used when a
 * module learns the display or Docker changed). */
void health_invalidate(void);

const char *health_boot_id(void);

#endif
