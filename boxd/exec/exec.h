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

#include "failure.h"

#include "exit-record.h"

struct boxd_config;
struct event;
struct event_base;

/* Ended foreground commands are kept (and answer GET /v1/exec/{id}) this
 * long, and at most this many holding at most this many bytes of captured
 * output and command text in the run dir (RAM in a box), oldest first out. */
#define EXEC_KEEP_ENDED_MS (60 * 60 * 1000)
#define EXEC_KEEP_ENDED_COUNT 1000
#define EXEC_KEEP_ENDED_BYTES (64u << 20)
/* Ended background commands stay listed until DELETE /v1/procs/{id}, or
 * until this many newer ones have ended (their logs stay in the work dir),
 * or newer ones' command texts and notes (kept in memory for the list)
 * pass this many bytes. */
#define EXEC_KEEP_ENDED_BACKGROUND 1000
#define EXEC_KEEP_ENDED_BACKGROUND_BYTES (16u << 20)
/* A command's note: a label for people, not a document. */
#define EXEC_NOTE_MAX 4096

enum exec_state { EXEC_RUNNING, EXEC_ENDED };

/* A validated request (api-exec.c fills it). */
struct exec_request {
	char *cmd;
	char *cwd;  /* absolute, an existing directory */
	char *user; /* as given, for the record */
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	size_t group_count;
	char *home;
	char **env; /* the request's own "NAME=value" entries */
	size_t env_count;
	char *stdin_data; /* NULL: /dev/null */
	size_t stdin_length;
	bool stdin_stream;           /* stdin kept open: POST /v1/exec/{id}/stdin, attach */
	unsigned pty_cols, pty_rows; /* a pseudo-terminal of this size; 0: none */
	int64_t timeout_ms;
	size_t max_output_bytes;
	uint64_t memory_max_bytes; /* memory.max of the command's cgroup; 0: none */
	bool background;
	bool streaming; /* hold output until the stream subscribes */
	char *note;
	char *id; /* NULL: exec_start picks one (see exec_new_id) */
};
void exec_request_free(struct exec_request *request);
/* Who the command runs as: `given` a name or a uid (NULL: the init's user,
 * else boxd's --user, else root; a uid without an entry runs with the same
 * gid and HOME=/). Fills the request's user, uid, gid, home and groups;
 * false with a sentence in `error` when there is no such user. */
bool exec_request_user(struct exec_request *request, const char *given, char *error,
		       size_t error_size);
/* Where it runs: `given` absolute, or relative to the work dir (NULL: the
 * init's work dir, else boxd's). False with the failure (cwd_not_found,
 * or bad_request for what is not a directory) and a sentence. */
bool exec_request_cwd(struct exec_request *request, const char *given, enum failure *failure,
		      char *error, size_t error_size);
/* A fresh command id ("c_..." foreground, "b_..." background), for a caller
 * that must name a command before it starts (the X-Request-Id memory). */
char *exec_new_id(bool background);

struct exec_job {
	char *id; /* "c_..." foreground, "b_..." background */
	char *note;
	struct shim_meta meta;
	enum exec_state state;
	struct exit_record exit;
	int64_t ended_monotonic;
	uint64_t kept_bytes; /* its captured output in the run dir, once ended */
	int monitor_fd;      /* our connection to the shim; -1 once it is gone */
	struct event *monitor_event;
	struct exec_watch *watches;
	bool adopted;                             /* being adopted at start: its end is not news */
	int busy;                                 /* holds (exec_hold): not forgotten while > 0 */
	struct exec_job *next, *prev;             /* every job, oldest first */
	struct exec_job *ended_next, *ended_prev; /* ended ones, in ending order */
};

/* Prepares cgroups and adopts every shim found in the run dir. `config` is
 * kept (not copied) until exec_shutdown. */
void exec_init(struct event_base *base, const struct boxd_config *config);

/* Removes boxd's cgroup dirs when no command is left in them. */
void exec_shutdown(void);

/* The cgroup v2 dir the commands' cgroups are made in (and the shims'),
 * NULL without one. Valid from exec_init to exec_shutdown. */
const char *exec_commands_cgroup(void);
/* The leaf within it where the shims live (never frozen by a freeze), or
 * NULL. */
const char *exec_shims_cgroup(void);

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

/* A command as steps show it: its first line, masked, at most 80 bytes,
 * " ..." when there is more. Caller frees. */
char *exec_summary(const char *command);

/* A request that keeps a job in hand holds it: a held job is not forgotten
 * (the hourly sweep skips it, exec_held() tells DELETE to refuse). */
void exec_hold(struct exec_job *job);
void exec_release(struct exec_job *job);
bool exec_held(const struct exec_job *job);

/* Signals the command's tree (SIGKILL after grace_ms). When the shim cannot
 * be reached there is no one to ask: the tree is killed, the job ends as
 * lost, and the answer is false. */
bool exec_stop(struct exec_job *job, int signal, int64_t grace_ms);
/* Forgets an ended job and its state dir (the log stays). */
void exec_forget(struct exec_job *job);

/* The fields of a result or an exit event: id, exitCode, signal, timedOut,
 * [stdout, stderr,] truncated, startedAt, durationMs, cpuMs,
 * peakMemoryBytes, logPath (and logError / message when set). */
cJSON *exec_result_json(struct exec_job *job, bool with_output);
/* A proc: bgId, cmd, cwd, pid, state, startedAt, endedAt, ... */
cJSON *exec_proc_json(struct exec_job *job);

/* The live output of a running job, for a streaming POST /v1/exec (the
 * shim holds the output of a job started with `streaming` until then).
 * `output` gets each piece as the shim sent it (not cut at characters);
 * `lost` the bytes the shim could not send while the reader was slow;
 * `ended` runs last, once the job's end is known (its result is read), and
 * may close the stream. `dropped` (optional) runs instead when the shim
 * refused the connection while the command runs (it serves 16 at most):
 * without it the stream waits for the command's end, whose output it
 * reports as lost, then `ended`. */
struct exec_stream_callbacks {
	void (*output)(void *arg, bool is_stderr, const char *data, size_t length);
	void (*lost)(void *arg, double bytes);
	void (*ended)(void *arg);
	void (*dropped)(void *arg);
};
struct exec_stream;
/* NULL when the shim is gone already: the job has then ended and the
 * caller reports its end itself. */
struct exec_stream *exec_subscribe(struct exec_job *job,
				   const struct exec_stream_callbacks *callbacks, void *arg);
/* The same for a client attaching to a command: the terminal's recent
 * output (SHIM_REPLAY_BYTES at most, held by the shim, so it survives a
 * restart of boxd) comes first through `output`, then the live output. */
struct exec_stream *exec_attach(struct exec_job *job, const struct exec_stream_callbacks *callbacks,
				void *arg);
/* What an attached client may ask of the command, on its stream:
 * RESIZE "COLS ROWS" (checked: exec_terminal_size_check), SIGNAL "SIGINT"
 * (to the terminal's foreground group; without a terminal to the whole
 * tree, once), CLOSE_STDIN (no payload). False when it cannot be sent. */
enum exec_control { EXEC_CONTROL_RESIZE, EXEC_CONTROL_SIGNAL, EXEC_CONTROL_CLOSE_STDIN };
bool exec_stream_control(struct exec_stream *stream, enum exec_control what, const char *payload);

/* NULL when `cols` and `rows` are a terminal size boxd takes (whole
 * numbers, 1 to 1000 each), else a sentence saying what is wrong. */
const char *exec_terminal_size_check(const cJSON *cols, const cJSON *rows);

/* A copy of a running command's input, asked of its shim: done() runs
 * once, later, with `fd` (the caller's, non-blocking: the stdin pipe or
 * the terminal's master; `terminal` says which) or -1 with the failure
 * (conflict: no open stdin, or ended) and a sentence (NULL with an fd).
 * It may run before exec_input returns (NULL then). Writes into a pipe
 * keep it open: close the copy when done with it. */
typedef void (*exec_input_fn)(void *arg, int fd, bool terminal, enum failure failure,
			      const char *error);
struct exec_input;
struct exec_input *exec_input(struct exec_job *job, exec_input_fn done, void *arg);
/* Forgets a pending request: done() does not run. */
void exec_input_cancel(struct exec_input *input);
/* Closes the command's stdin (the shim's end of the pipe; on a terminal,
 * the end-of-file character). False when the shim cannot be reached. */
bool exec_close_stdin(struct exec_job *job);

/* Stops taking output (the shim counts what it cannot send) until resumed. */
void exec_stream_pause(struct exec_stream *stream);
void exec_stream_resume(struct exec_stream *stream);
void exec_stream_close(struct exec_stream *stream);

#endif
