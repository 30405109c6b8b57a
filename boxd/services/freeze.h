/* freeze.h: readying the box for the host's snapshot (POST /v1/freeze), and
 * undoing it (POST /v1/thaw, an init, or boxd itself).
 *
 * A freeze writes what boxd and the commands wrote to disk (sync); with
 * `reclaim` it drops the clean caches so that the snapshot is small; with
 * `commands` it stops every command and container with the cgroup v2
 * freezer, confirmed frozen before it answers, so nothing changes disk or
 * memory while the host saves. While frozen, the router answers 409 `frozen`
 * to every call but health, init and thaw (API_SERVED_FROZEN).
 *
 * The state is kept in RUN_DIR/freeze.json from the first cgroup frozen on:
 * a boxd that restarts while frozen stays frozen and can still undo it. A
 * cgroup that was frozen before (docker pause) is never touched. A freeze
 * nobody undoes is undone by boxd after --freeze-limit (10 minutes) of the
 * box's running time (CLOCK_MONOTONIC, which stands still while the host has the box
 * paused). docs/freeze.md says why for each. */
#ifndef BOXD_FREEZE_H
#define BOXD_FREEZE_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "failure.h"

struct event_base;

/* How long the commands get to reach the frozen state (a process in an
 * uninterruptible wait delays it) before the freeze gives up. */
#define FREEZE_SETTLE_MS 5000

/* Takes up a freeze kept by the boxd before this one. `commands` and
 * `shims`: exec's cgroups (may be NULL); kept, not copied. */
void freeze_init(struct event_base *base, const char *run_dir, int limit_sec, const char *commands,
		 const char *shims);
/* Stops the timer (boxd ends: the freeze is kept for the next boxd). */
void freeze_stop(void);

/* True from the start of a freeze until it is undone. */
bool freeze_active(void);

/* `done` runs once, later, with the answer (owned by it) or with a failure
 * and a sentence: the commands did not freeze in time (all undone), or the
 * freeze was undone before it finished. Only one freeze at a time: the
 * router refuses a second (freeze_active). */
typedef void (*freeze_done_fn)(void *arg, cJSON *answer, enum failure failure, const char *error);
void freeze_start(bool reclaim, bool commands, freeze_done_fn done, void *arg);

/* Undoes the freeze (`why` for the log: "thaw", "init", "limit"). Returns
 * {"thawed": bool, "frozenMs", "commands": {"thawed": N}}; thawed is false
 * when nothing was frozen. */
cJSON *freeze_undo(const char *why);

#endif
