/* health.h: what `GET /v1/health` and the report stream say about the box.
 *
 * The display and Docker are probed without blocking the loop. A probe
 * result is served for HEALTH_PROBE_FRESH_MS; after that the next caller
 * gets it once more while a new probe runs behind it, so a caller polling
 * health never waits on an X server that answers and sees a change one call
 * later. A result saying the display or Docker is down (socket missing,
 * refused or closed) is not kept: the next call probes again and waits for
 * it, so a display that has come up is never reported down. A server that
 * accepts but does not answer within the probe's 3 s is down, served like
 * any other result. */
#ifndef BOXD_HEALTH_H
#define BOXD_HEALTH_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#define HEALTH_PROBE_FRESH_MS 2000

void health_init(void);
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

/* Records an API call for activity.lastCallAt (the router calls it). */
void health_note_call(void);

/* Forgets the probe results, so the next collect probes again (used when a
 * module learns the display or Docker changed). */
void health_invalidate(void);

const char *health_boot_id(void);

#endif
