/* exec-spawn.h: starting boxd-shim processes for exec.c.
 *
 * A shim is born straight into the shims' cgroup where there is one, as
 * `boxd-shim --spare` with a channel (a socketpair) on its stdin. Spares are
 * kept started and prepared ahead of need (exec-spawn.c says what that
 * buys), so a command's start is one message to a waiting shim. */
#ifndef BOXD_EXEC_SPAWN_H
#define BOXD_EXEC_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct event_base;
struct shim_spec;

/* Fills the preparation a shim gets for `id` (exec.c): its state dir, log
 * path and cgroups, as the spec of a command with that id will have them. */
typedef void (*exec_prepare_fn)(struct shim_spec *spec, const char *id);

/* Starts the pool (on `base`). */
void exec_spawn_init(struct event_base *base, const char *shim_program, const char *shim_cgroup,
		     exec_prepare_fn prepare);
/* The id a spare was prepared for ("c_HEX", or "b_HEX" for a background
 * command), reserved for the caller's exec_spawn in the same turn of the
 * loop; NULL when no spare is free (the caller picks an id). Caller frees. */
char *exec_spawn_claim(bool background);
/* Hands the spec in `spec_fd` to the spare claimed for `id` (or to another,
 * or to a shim started now). Returns the channel, on which the shim answers
 * (shim-protocol.h) and which is boxd's connection to it from then on; -1
 * with a sentence on failure. `seedable` false: the spare's seed (forked
 * ahead, its stdio set) cannot run this command (a terminal's needs a
 * session and stdio of its own), and the shim forks it instead. */
int exec_spawn(const char *id, int spec_fd, bool seedable, char *error, size_t error_size);
/* Makes the missing spares in `delay_ms`, once the loop has nothing else to
 * do (0: as soon as it has not). */
void exec_spawn_refill(int delay_ms);
/* Lets the spares go (at a clean stop) and waits, briefly, until they are. */
void exec_spawn_stop(void);
/* Lets the spares go without waiting for them to leave, and makes new ones.
 * Two boxes restored from one snapshot would otherwise run their next
 * commands under the same spares: the same reserved command ids, and one
 * process, exec'd before the snapshot, with one stack canary, pointer guard
 * and address layout in both. */
void exec_spawn_renew(void);

#endif
