/* cgroup.h: cgroup v2 (and the v1 pids controller on hybrid hosts) for
 * commands: each command's tree gets its own cgroup, so a timeout or a stop
 * reaches every process it spawned, daemons included.
 *
 * The cgroup2 mount is found in /proc/self/mountinfo: `/sys/fs/cgroup` on a
 * unified host, `/sys/fs/cgroup/unified` (without controllers) on a hybrid one,
 * where the v1 pids controller still limits a fork bomb. Every function fails
 * soft: the caller falls back to process groups and says what it could not do. */
#ifndef BOXD_CGROUP_H
#define BOXD_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct cgroup_host {
	char *v2_mount;   /* NULL: no cgroup2 mounted */
	char *v2_self;    /* our cgroup v2 path, "/..." */
	char *pids_mount; /* cgroup v1 pids hierarchy, or NULL */
	char *pids_self;
};

/* Reads where the hierarchies are mounted and where this process sits. */
bool cgroup_discover(struct cgroup_host *host);
void cgroup_host_free(struct cgroup_host *host);

/* Where boxd's commands go: for boxd (not the shim). Three layouts
 * (docs/confinement.md says why):
 * - `commands` given (a cgroup v2 path such as
 *   /system.slice/boxd-commands.service, a delegated unit whose one process
 *   sits in a leaf): commands go there, beside boxd's unit, and boxd enables
 *   the pids, memory and cpu controllers for them;
 * - boxd in the root cgroup (a development machine): a dir `boxd-<tag>` below
 *   it, controllers enabled where the host has them;
 * - otherwise (boxd in a unit of its own, no commands' cgroup): a `commands`
 *   child of boxd's cgroup and no controllers, so that systemd can always put
 *   the next boxd into its unit's cgroup.
 * Sets *v2_base, *shim_dir (a leaf for the shims) and *pids_base (v1 pids,
 * when v2 has no pids controller); each may be NULL. Returns a sentence about
 * what is missing, or NULL when all is there. */
char *cgroup_prepare(const struct cgroup_host *host, const char *tag, const char *commands,
		     char **v2_base, char **shim_dir, char **pids_base);
/* True when the memory controller is enabled for the commands in v2_base
 * (memory.max, memory.peak and memory.events exist in their cgroups). */
bool cgroup_has_memory(const char *v2_base);

struct cgroup_job {
	char *v2_dir;   /* NULL when not created */
	char *pids_dir; /* v1 pids dir, NULL when not created */
};

/* Creates the cgroups of one command (`id`) with a pids limit and a memory
 * cap (0: none), and memory.oom.group set. False when the memory cap could not
 * be set (the command must not run uncapped); a missing dir is not an error. */
bool cgroup_job_create(struct cgroup_job *job, const char *v2_base, const char *pids_base,
		       const char *id, uint64_t pids_max, uint64_t memory_max);
/* memory.max of the job's v2 cgroup; false when it cannot be set. */
bool cgroup_job_set_memory_max(const struct cgroup_job *job, uint64_t memory_max);
/* Gives cgroups made ahead for another id the name `id`: the v1 pids dir is
 * renamed, a v2 dir (which cgroup2 cannot rename) is made anew with the
 * same limits and the old one removed. False when that fails. */
bool cgroup_job_rename(struct cgroup_job *job, const char *v2_base, const char *id,
		       uint64_t pids_max);
/* Moves the calling process into the job's cgroups. Async-signal-safe (for a
 * child between fork and exec); false when a move failed. */
bool cgroup_job_join(const struct cgroup_job *job);
/* True when cgroup dir `inner` is `outer` or below it (whole components). */
bool cgroup_dir_within(const char *inner, const char *outer);
/* Moves `pid` into the cgroup dir `dir` (for the shim joining its leaf). */
bool cgroup_move(const char *dir, pid_t pid);
/* Signals every process of the job (cgroup.kill for SIGKILL where the kernel
 * has it). Returns how many processes it found, -1 when it could not tell. */
int cgroup_job_signal(const struct cgroup_job *job, int signal);
/* Writes 0 to the job's cgroup.freeze: another command may have frozen
 * it. False without a v2 cgroup or a freezer there. */
bool cgroup_job_thaw(const struct cgroup_job *job);
/* The value of `key` in one of a cgroup v2 dir's flat keyed files
 * (cgroup.events: "frozen", "populated"), -1 when unreadable. */
int cgroup_keyed_value(const char *dir, const char *file, const char *key);
/* The cgroup's own cgroup.freeze setting (not an ancestor's): 1 or 0, -1
 * when unreadable (the cgroup is gone, or there is no freezer). */
int cgroup_freeze_setting(const char *dir);
/* Writes 1 or 0 to its cgroup.freeze; false with errno. */
bool cgroup_set_freeze(const char *dir, bool frozen);
/* True while any process is left in the job, in cgroups below its own
 * too where cgroup v2 tells (-1: cannot tell). */
int cgroup_job_populated(const struct cgroup_job *job);
/* CPU time of the whole tree in ms, or -1. */
int64_t cgroup_job_cpu_ms(const struct cgroup_job *job);
/* Peak memory of the whole tree in bytes, or -1 (hybrid hosts cannot tell). */
int64_t cgroup_job_peak_memory(const struct cgroup_job *job);
/* How many processes of the tree the OOM killer killed (memory.events
 * oom_kill), or -1 when the kernel cannot tell (no memory controller). */
int64_t cgroup_job_oom_kills(const struct cgroup_job *job);
/* Removes the (empty) cgroup dirs. */
void cgroup_job_remove(const struct cgroup_job *job);
/* Removes the empty cgroups a command made below its own `dir` (a bounded
 * walk: a few levels, a few thousand cgroups), so that dir can go too. */
void cgroup_remove_below(const char *dir);
void cgroup_job_free(struct cgroup_job *job);

#endif
