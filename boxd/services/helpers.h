/* helpers.h: boxd's helper programs (boxd-shim, boxd-screen, boxd-archive):
 * where they are, the clean signal state each starts with, and the pidfd
 * that tells boxd, on its loop, when one has exited. */
#ifndef BOXD_HELPERS_H
#define BOXD_HELPERS_H

#include <spawn.h>
#include <sys/types.h>

struct event_base;

/* The path of helper `name` (caller frees): beside boxd's own executable
 * (an install that keeps them together, or the build tree's boxd/), then in
 * the build tree's program folders (shims/, boxd/screen/, boxd/archive/),
 * then BOXD_LIBEXECDIR. The environment variable
 * BOXD_HELPER_DIR, when set, is looked in first (for tests and debugging). */
char *helper_path(const char *name);

/* Initialises spawn attributes for a helper: no signal blocked and every
 * signal at its default, whatever boxd's own settings (the caller destroys
 * them with posix_spawnattr_destroy). */
void helper_spawn_attributes(posix_spawnattr_t *attributes);

/* A pidfd for `pid` (readable once it has exited), or -1. */
int helper_pidfd(pid_t pid);
/* Once the pidfd is readable: the exit status as waitpid() gives it, or -1
 * when it could not be read. Reaps the helper and closes the pidfd. */
int helper_reap(int pid_fd);

/* Calls exited() (if given) once on `base` when helper `pid` (a child of
 * boxd) has exited, reaped, with its status; with -1 when it has not exited
 * within `timeout_ms` (< 0: no limit; the helper is then left as it is) or
 * cannot be watched. The watch frees itself before exited() runs; cancel it
 * only before. */
typedef void (*helper_exited_fn)(int status, void *arg);
struct helper_exit_watch;
struct helper_exit_watch *helper_watch_exit(struct event_base *base, pid_t pid, int timeout_ms,
					    helper_exited_fn exited, void *arg);

#endif
