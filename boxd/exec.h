/* exec.h: the commands boxd knows, foreground and background.
 *
 * A command belongs to its boxd-shim (shims/boxd-shim.c), not to boxd: boxd
 * starts the shim, keeps one connection to it (its end tells boxd the shim is
 * gone) and reads the state files the shim writes in RUN_DIR/procs/<id>.
 * After a restart exec_init() finds every shim again. All functions run on
 * the event loop. */
#ifndef BOXD_EXEC_H
#define BOXD_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "exit-record.h"

struct event;

/* Ended foreground commands are kept (and answer GET /v1/exec/{id}) this long. */
#define EXEC_KEEP_ENDED_MS (60 * 60 * 1000)

enum exec_state { EXEC_RUNNING, EXEC_ENDED };

/* A validated request (api-exec.c fills it). */
struct exec_request {
	char *cmd;
	char *cwd;          /* absolute, an existing directory */
	char *user;         /* as given, for the record */
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	size_t group_count;
	char *home;
	char **env;         /* the request's own "NAME=value" entries */
	size_t env_count;
	char *stdin_data;   /* NULL: /dev/null */
	size_t stdin_length;
	int64_t timeout_ms;
	size_t max_output_bytes;
	uint64_t memory_max_bytes; /* memory.max of the command's cgroup; 0: none */
	bool background;
	bool streaming;     /* hold output until the stream subscribes */
	char *note;
};
void exec_request_free(struct exec_request *request);

struct exec_job {
	char *id;           /* "c_..." foreground, "b_..." background */
	char *note;
	struct shim_meta meta;
	enum exec_state state;
	struct exit_record exit;
	int64_t ended_monotonic;
	int monitor_fd;     /* our connection to the shim; -1 once it is gone */
	struct event *monitor_event;
	struct exec_watch *watches;
	bool adopted;       /* being adopted at start: its end is not news */
	int busy;           /* requests holding the job (not forgotten while > 0) */
	struct exec_job *next;
};

/* Prepares cgroups and adopts every shim found in the run dir. */
void exec_init(void);

/* Removes boxd's cgroup dirs when no command is left in them. */
void exec_shutdown(void);

/* Starts a command; `started` runs once, later, with the job or with an
 * error code and sentence. Takes ownership of `request`. */
typedef void (*exec_started_fn)(void *arg, struct exec_job *job, const char *code,
				const char *error);
void exec_start(struct exec_request *request, exec_started_fn started, void *arg);

struct exec_job *exec_find(const char *id);
/* Iteration over every known job, oldest first. */
struct exec_job *exec_first(void);
int exec_running_background(void);
/* True when commands' cgroups take a memory cap (memory controller on). */
bool exec_memory_caps(void);

/* Called once when the job ends (at once if it has). Unwatch before the
 * watcher's memory goes. */
struct exec_watch {
	void (*ended)(void *arg, struct exec_job *job);
	void *arg;
	struct exec_watch *next;
};
void exec_watch(struct exec_job *job, struct exec_watch *watch);
void exec_unwatch(struct exec_job *job, struct exec_watch *watch);

/* Signals the command's tree (SIGKILL after grace_ms). False when the shim
 * cannot be reached. */
bool exec_stop(struct exec_job *job, int signal, int64_t grace_ms);
/* Forgets an ended job and its state dir (the log stays). */
void exec_forget(struct exec_job *job);

/* The fields of a result or an exit event: id, exitCode, signal, timedOut,
 * [stdout, stderr,] truncated, startedAt, durationMs, cpuMs,
 * peakMemoryBytes, logPath (and logError / message when set). */
cJSON *exec_result_json(struct exec_job *job, bool with_output);
/* A proc: bgId, cmd, cwd, pid, state, startedAt, endedAt, ... */
cJSON *exec_proc_json(struct exec_job *job);
/* The state dir of a job: RUN_DIR/procs/<id>. Caller frees. */
char *exec_state_path(const char *id, const char *name);

/* A new non-blocking connection to the job's shim, or -1. */
int exec_connect(struct exec_job *job);

/* procs.c: finds the shims in the run dir (at start). */
void procs_adopt(void);
/* exec.c internals procs.c uses. */
struct exec_job *exec_job_add(const char *id);
void exec_job_monitor(struct exec_job *job, int fd);
void exec_job_ended(struct exec_job *job);
void exec_job_lost(struct exec_job *job);

#endif
