/* exec-internal.h: what exec's own files (exec.c, exec-start.c,
 * exec-kept.c, exec-adopt.c, exec-json.c, exec-stream.c) share and nothing
 * else includes. The shim's
 * wire protocol (shim-protocol.h) stays behind this line. */
#ifndef BOXD_EXEC_INTERNAL_H
#define BOXD_EXEC_INTERNAL_H

#include "exec.h"

struct boxd_config;
struct event_base;

/* The loop and the settings exec_init was given. */
struct event_base *exec_loop(void);
const struct boxd_config *exec_settings(void);
/* The commands' cgroups (cgroup.h's cgroup_prepare): v2 base, the shims'
 * leaf, the v1 pids base; each NULL when there is none. */
struct exec_cgroups {
	const char *base, *shims, *pids;
};
const struct exec_cgroups *exec_cgroups(void);

/* exec-start.c: what does not depend on the command, all a spare gets
 * ahead (exec-spawn.h). */
struct shim_spec;
void exec_prepare_spec(struct shim_spec *spec, const char *id);

/* exec-kept.c: an ended job joins its queue (exec_job_finish) or leaves it
 * (exec_forget); the sweep forgets the oldest past the bounds of exec.h. */
void exec_kept_add(struct exec_job *job);
void exec_kept_remove(struct exec_job *job);
void exec_kept_sweep(void);

/* The state dir of a job: RUN_DIR/procs/<id>, or a file in it. Caller frees. */
char *exec_state_path(const char *id, const char *name);
/* Removes a job's state dir with every file a shim may leave in it. */
void exec_remove_state_dir(const char *id);
/* The same, with what a spare made ahead for `id` (its empty cgroups, its
 * empty log): for a command that never started. */
void exec_remove_prepared(const char *id);

/* A new non-blocking connection to the job's shim, or -1. */
int exec_connect(struct exec_job *job);

struct exec_job *exec_job_add(const char *id);
void exec_job_monitor(struct exec_job *job, int fd);
/* Reads the job's exit record and tells its watchers; without a record the
 * shim was killed (exec_job_lost). Does nothing for an ended job. */
void exec_job_ended(struct exec_job *job);
/* The same on the shim's exit notice, whose payload is the record itself
 * when the shim could not write its file (`length` 0: none). */
void exec_job_exit_notice(struct exec_job *job, const char *record, size_t length);
/* Kills the tree of a job whose shim is gone and records its end. */
void exec_job_lost(struct exec_job *job);

/* The job's end is known (job->exit holds it): records it and tells its
 * watchers (no step or watcher for a job adopted at start). */
void exec_job_finish(struct exec_job *job);

/* exec-adopt.c: finds the shims in `dir` (RUN_DIR/procs) at start, then the
 * background commands recorded in the work dir from before a reboot. */
void exec_adopt(const char *dir);
/* Background commands recorded in WORK/.sbx/procs (see exec-adopt.c). */
void exec_disk_init(const char *work_dir);
void exec_disk_keep_start(const struct exec_job *job);
void exec_disk_keep_end(const struct exec_job *job);
void exec_disk_forget(const char *id);

#endif
