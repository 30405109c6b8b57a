/* exec-spawn.h: starting boxd-shim processes for exec.c.
 *
 * A shim is born straight into the shims' cgroup where there is one. One
 * spare shim is kept started ahead of need (detached, asleep on a socket), so
 * a command's start does not wait for a shim's own start; it costs one
 * sleeping process and leaves when boxd closes its socket or dies. */
#ifndef BOXD_EXEC_SPAWN_H
#define BOXD_EXEC_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

void exec_spawn_init(const char *shim_program, const char *shim_cgroup);
/* Starts a shim (or wakes the spare) for the spec in `spec_fd`. Sets the
 * pid of the first shim process (to reap once the answer pipe closes) and
 * the read end of its answer pipe. False with a sentence on failure. */
bool exec_spawn(int spec_fd, pid_t *first_pid, int *status_fd, char *error, size_t error_size);
/* Starts a spare if there is none. */
void exec_spawn_spare(void);
/* Lets the spare go (at a clean stop). */
void exec_spawn_stop(void);
/* Lets the spare go without waiting for it to leave, and starts another.
 * Two boxes restored from one snapshot would otherwise run their next
 * command under the same spare: one process, exec'd before the snapshot,
 * with one stack canary, pointer guard and address layout in both. */
void exec_spawn_renew(void);

#endif
