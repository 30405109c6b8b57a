/* protected.h: the processes a command may not signal, trace or take down:
 * boxd, every boxd-shim and boxd's workers (boxd-screen, boxd-archive).
 *
 * They are known by identity, never by name or path: each has an entry in a
 * directory (RUN_DIR/protected), a file named by its pid that holds its start
 * time (from /proc/PID/stat) and the cgroup v2 dir it lives in. An entry left
 * by a process that died never covers another process that reuses its pid,
 * since the start times differ. boxd adds itself and its workers; each shim
 * adds itself. The shims' command guard (shims/shim-guard.c) reads entries
 * when a command aims a signal, a trace, a resource limit or a signal owner
 * at a process; nothing here runs on any other path.
 *
 * A root command can still delete the directory or do worse (see
 * docs/confinement.md): this stops ordinary and careless commands, and makes
 * the refusal a clear EPERM. */
#ifndef BOXD_PROTECTED_H
#define BOXD_PROTECTED_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The process's start time in clock ticks since boot, 0 when it is gone. */
uint64_t protected_start_time(pid_t pid);
/* The thread group (process) a thread id belongs to, or 0. */
pid_t protected_thread_group(pid_t tid);
/* The process group of `pid`, or 0. */
pid_t protected_process_group(pid_t pid);
/* The parent of `pid`, or 0 when it is gone. */
pid_t protected_parent(pid_t pid);
/* The cgroup v2 dir `pid` lives in, mount point included ("" when
 * unknown: no cgroup2, or the process is gone). */
void protected_cgroup_of(pid_t pid, char *dir, size_t size);

/* Looks up now what protected_add needs of the system (where cgroup v2 is
 * mounted), for this process and the processes it forks later. */
void protected_warm(void);
/* Adds `pid` to the directory (made 0700 if missing). False when it could
 * not be written (a full run dir): the process is then unprotected. */
bool protected_add(const char *dir, pid_t pid);
/* The same for a process on its way to `cgroup` (a v2 dir it moves itself
 * into), which the entry records as its home instead of where it is now. */
bool protected_add_in(const char *dir, pid_t pid, const char *cgroup);
void protected_remove(const char *dir, pid_t pid);
/* Removes the entries of processes that are gone (at boxd's start). */
void protected_prune(const char *dir);

/* True when `pid` (a process, or any thread of one) is protected. */
bool protected_is(const char *dir, pid_t pid);
/* True when a protected process is in process group `pgid`. */
bool protected_in_group(const char *dir, pid_t pgid);
/* Before a command's cgroup is killed (and before it is removed): moves
 * every protected process found in `cgroup_dir` or in any cgroup below it
 * back to its own cgroup (a command could have moved boxd there). Returns
 * how many it moved. */
int protected_rescue(const char *dir, const char *cgroup_dir);

#endif
