/* init.h: what the control plane sets at claim and after every thaw or
 * restore (POST /v1/init): the clock, a block of /etc/hosts, and defaults
 * for later commands (environment, user, working dir).
 *
 * The settings outlive a restart of boxd (RUN_DIR/init.json, 0600), so a
 * boxd restarted by systemd keeps the defaults and still ignores an init
 * older than the last one applied. */
#ifndef BOXD_INIT_H
#define BOXD_INIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* The clock is set when it is more than this far behind the caller's... */
#define INIT_CLOCK_BEHIND_MS 50
/* ...or this far ahead (a box thawed after a freeze is behind, never ahead
 * by much: ahead means the caller's clock is the suspect one). */
#define INIT_CLOCK_AHEAD_MS 5000

/* An init older than the last one applied is a late duplicate (ignored)
 * when it is older by at most this: no call of the control plane is late
 * by more (its request timeout is shorter, and a retry that carries its
 * X-Request-Id is replayed before it gets here). An init older by more
 * applies: the last one cannot have carried the host's time, so no init
 * with a time far ahead makes every later real one lose. */
#define INIT_LATE_MS 60000

/* `hosts_path`: the hosts file whose boxd block init rewrites. */
void init_start(const char *run_dir, const char *hosts_path);

struct init_outcome {
	bool applied; /* false: older than the last one applied (ignored) */
	bool clock_set;
	const char *entropy; /* entropy_give()'s word, NULL when none was given */
	int system_error;    /* the errno when boxd could not do its part */
};

/* Applies an init request (already parsed, see api-init.c). Returns false
 * with a sentence in `error` when a field is malformed (nothing applied,
 * system_error 0) or boxd could not do its part (the hosts file could not
 * be written, the clock not set: system_error is the errno, ENOSPC for a
 * full disk). The entropy is given first, even to an init older than the
 * last one applied. */
bool init_apply(const cJSON *request, struct init_outcome *outcome, char *error, size_t error_size);

/* Whether a clock at `now_ms` must be set to `unix_ms` (the margins above). */
bool init_clock_is_off(int64_t now_ms, int64_t unix_ms);

/* The defaults later commands get; NULL when none was set. */
const char *init_user(void);
const char *init_work_dir(void);
/* Calls `each` with every "NAME=value" entry of the init environment. */
void init_env_foreach(void (*each)(const char *entry, void *arg), void *arg);

/* New at every start of boxd and every applied init: two boxes restored
 * from one snapshot differ once the control plane has initialised them. */
const char *init_instance_id(void);

/* `fn(ctx)` runs after every applied init (a claim, a thaw, a restore),
 * after the health probes are reset: for what must be made anew after a
 * snapshot (exec's spare shims). At most 4. */
void init_on_applied(void (*fn)(void *ctx), void *ctx);

#endif
