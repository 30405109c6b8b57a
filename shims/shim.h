/* shim.h: the parts of boxd-shim, shared between its files only.
 *
 * One shim supervises one command: it is the command's parent and child
 * subreaper, reads its stdout and stderr, masks them, writes the log, keeps
 * the foreground captures, enforces the timeout and writes the exit record.
 * It runs a single-threaded poll(2) loop and never waits on boxd. */
#ifndef SHIM_SHIM_H
#define SHIM_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "shim-spec.h"

struct mask_stream;

/* The newest `size` bytes of a stream (shim-ring.c). */
struct shim_ring {
	char *data; /* NULL: nothing kept */
	size_t size, start, length;
};
/* Keeps the newest of `data`, dropping the oldest past the size. */
void ring_add(struct shim_ring *ring, const char *data, size_t length);
/* What the ring holds, oldest first, as one piece (caller frees; NUL after). */
char *ring_copy(const struct shim_ring *ring);

/* First and last halves of one stream, for a foreground result. */
struct shim_capture {
	size_t half; /* bytes kept at each end; 0: capture nothing */
	char *head;
	size_t head_length;
	struct shim_ring tail; /* of `half` bytes */
	uint64_t total;
};

struct shim_stream {
	int fd;    /* read end of the command's pipe; -1 at EOF */
	char kind; /* SHIM_MSG_STDOUT or SHIM_MSG_STDERR */
	struct shim_capture capture;
	struct mask_stream *masker; /* NULL until masking is available */
};

struct shim_log {
	int fd;        /* -1 when it could not be written */
	uint64_t size; /* current file size */
	uint64_t cap;
	uint64_t total; /* bytes of output over the command's life */
	uint64_t base;  /* where the current file starts in that output */
	char *error;    /* why the log is incomplete, or NULL */
	char *path;
	char *base_path; /* STATE_DIR/log-base, or NULL */
};

#define SHIM_MAX_CLIENTS 16

struct shim_client {
	int fd;
	bool subscribed;
	uint64_t lost; /* bytes not streamed since the last LOST notice */
};

/* What a command's start needs that does not depend on the command: made
 * ahead by a spare shim while it waits for its spec (shim-prepare.c), for
 * the id boxd reserved for it, so the start pays for none of it. */
struct shim_prepared {
	char *id;             /* the id it was made for; NULL: nothing made */
	char *state_dir;      /* where it is now (renamed with the id) */
	bool made_state_dir;  /* by this shim (an old boxd makes it itself) */
	int state_fd;         /* the state dir, for the *at() calls; -1 */
	int meta_fd;          /* meta.tmp in it, empty; -1 */
	int cgroup_fd;        /* O_PATH of job.v2_dir for CLONE_INTO_CGROUP; -1 */
	int seed_socket;      /* the seed's socket from boxd, until the seed has it */
	pid_t seed;           /* the seed (shim-run.c), 0: none */
	pid_t protected_seed; /* the seed's entry among the protected, 0: none */
	int out[2], err[2], in[2], report[2], guard[2], null_fd;
	void *guard_filter; /* the compiled seccomp filter; NULL: compile in the child */
	bool is_protected;
	char code[32]; /* the first thing that could not be made ... */
	char *error;   /* ... said as the start's answer; NULL: all made */
};

struct shim {
	struct shim_spec spec;
	struct cgroup_job job;
	struct shim_prepared prep;
	int channel; /* boxd's end of the socketpair (--spare); -1: an old
			       * boxd's shim, answering on stdout */
	pid_t pid;   /* the command's shell */
	int64_t started_at, started_monotonic;
	struct shim_stream out, err;
	struct shim_log log;
	int stdin_fd; /* write end while stdin text is pending, else -1 */
	size_t stdin_written;
	/* The command's input while it is open, else -1: the write end of the
	 * stdin pipe (stdin stream) or the terminal's master (pty_fd). boxd
	 * writes into a dup of it (SHIM_MSG_INPUT_FD). */
	int input_fd;
	int pty_fd;              /* the terminal's master, -1 without one */
	struct shim_ring replay; /* the terminal's newest output (no data without one) */
	int listen_fd;
	struct shim_client clients[SHIM_MAX_CLIENTS];
	int guard_fd;        /* seccomp notification fd, -1 without */
	bool born_in_cgroup; /* the command was cloned straight into its cgroup v2 */
	bool pids_joined;    /* (in the command's process) its v1 pids cgroup too */
	bool seeded;         /* the seed got the spec: it is the command */
	bool exited;         /* the shell has been reaped */
	int wait_status;
	bool timed_out;
	int64_t kill_at;    /* monotonic ms of the pending SIGKILL, 0: none */
	bool killed_once;   /* a SIGKILL went to the tree: later ones seek it out */
	int64_t timeout_at; /* monotonic ms of the timeout, 0: none */
	int64_t held_until; /* output is not read before a subscriber comes or then */
	bool recorded;      /* the exit record is written (or in exit_notice) */
	char *exit_notice;  /* the record, when its file could not be written */
	size_t exit_notice_length;
};

/* shim-prepare.c */
/* Nothing made yet (every descriptor -1). */
void prepare_init(struct shim *shim);
/* Makes what shim->spec's command will need (the spare's preparation spec,
 * or a command's own spec when nothing was made ahead). A failure is kept in
 * prep.error and becomes the start's answer. */
void prepare(struct shim *shim);
/* Takes the command's spec: uses what was made when it was made for this
 * id (true); renames it for the same id under the other prefix (a
 * background command); else removes it and makes it anew. Takes ownership
 * of `spec`. */
bool prepare_take(struct shim *shim, struct shim_spec *spec);
/* Removes what was made and never used (a spare boxd no longer needs), the
 * seed first; the shim's entry among the protected processes stays (main
 * removes it). */
void prepare_discard(struct shim *shim);
/* After the command's start: closes what the shim keeps no longer. */
void prepare_done(struct shim *shim);
/* The command's cgroups, once its tree is gone. */
void prepare_remove_cgroups(struct shim *shim);
/* A cgroup made ahead that is gone by the start (removed from outside): made
 * again, with the command's limits. False when it cannot be. */
bool prepare_cgroup_again(struct shim *shim);

/* shim-run.c */
/* Forks the command (or takes the seed that has its spec already) and
 * waits, bounded, for its exec: a first process held by another command
 * (stopped, frozen) is let go, or replaced by a fresh fork when it never
 * exec'd. On failure returns false with a code and a sentence. */
bool run_start(struct shim *shim, char *code, size_t code_size, char *error, size_t error_size);
/* A spare's seed: the command's first process, forked now into the cgroups
 * made for it, where it waits for the spec on the socket boxd sent with the
 * preparation. Needs everything else prepared (prepare()). */
void seed_start(struct shim *shim);
/* Ends a seed that did not get the spec (another id, or boxd went away). */
void seed_stop(struct shim *shim);
/* Removes the waiting seed's entry among the protected processes: once it
 * is the command, its own command may signal it. */
void seed_unprotect(struct shim *shim);
/* Signals the whole tree: the cgroup when there is one, else the process
 * group and every descendant found under the shim in /proc. */
void run_signal_tree(struct shim *shim, int signal);
/* SIGKILL to every process whose parent chain leads to the shim, wherever
 * it is (a descendant that left its cgroup and its session included). */
void run_kill_descendants(void);

/* shim-output.c */
void output_init(struct shim *shim);
/* Reads what the pipe has; false at EOF. */
bool output_read(struct shim *shim, struct shim_stream *stream);
/* Flushes the maskers. */
void output_finish(struct shim *shim);
/* The captures (a foreground command's), when both together take at most
 * `limit` bytes: in texts[] (caller frees). False otherwise, or without
 * captures: then output_save_captures writes them to the state dir. */
bool output_captures(struct shim *shim, size_t limit, char *texts[2], size_t lengths[2]);
void output_save_captures(struct shim *shim);
void output_set_secrets(struct shim *shim, const char *values, size_t length);
/* `text` masked with the current secrets; caller frees. */
char *output_mask_text(const char *text);
/* Marks the capture truncated (for the exit record). */
bool output_truncated(const struct shim *shim);

/* shim-terminal.c: the pseudo-terminal of a command started with one. */
/* Opens the master and its slave at the spec's size; false with errno. */
bool terminal_open(struct shim *shim, int *slave);
/* In the command's child, stdio already on the slave: a session of its
 * own with the slave as its controlling terminal. */
bool terminal_adopt_in_child(void);
/* "COLS ROWS" from boxd: the new size (SIGWINCH goes out by itself). */
void terminal_resize(struct shim *shim, const char *payload);
/* A signal to the terminal's foreground process group, as a key would. */
void terminal_signal(struct shim *shim, int signal);

/* shim-log.c */
/* `state_dir` (may be NULL) gets the log-base file at each rotation. */
void log_file_open(struct shim_log *log, const char *path, uint64_t cap, const char *state_dir);
void log_file_write(struct shim_log *log, const char *data, size_t length);
void log_file_close(struct shim_log *log);

/* shim-socket.c */
bool socket_listen(struct shim *shim, char *error, size_t error_size);
void socket_accept(struct shim *shim);
/* A client's message that the main loop acts on: a stop or new secrets. */
struct shim_request {
	char kind;     /* SHIM_MSG_STOP, _SECRETS, _CLOSE_STDIN, _RESIZE or _SIGNAL */
	char *payload; /* NUL-terminated; wiped by shim_request_free */
	size_t length;
};
/* Reads one message from client i and handles a subscription itself; true
 * with a stop or secrets in `request` for the loop to act on. Drops a
 * client that went away or speaks nonsense. */
bool socket_read(struct shim *shim, int index, struct shim_request *request);
void shim_request_free(struct shim_request *request);
void socket_broadcast(struct shim *shim, char kind, const char *data, size_t length);
void socket_send_exit(struct shim *shim);
void socket_send_exit_to(struct shim *shim, struct shim_client *client);

/* shim-guard.c */
/* Compiles the seccomp filter ahead (a spare shim does, while it waits), so
 * the command's child only loads it. NULL when libseccomp cannot. */
void *guard_prepare(void);
/* In the command's child, before exec: installs the seccomp filter that hands
 * every signal-sending syscall to the shim (`filter` from guard_prepare, or
 * NULL to compile it here), and sends the notification fd over `channel`.
 * Async-signal-safe enough for a child of a single-threaded parent. False
 * when the kernel refuses. */
bool guard_install(int channel, const void *filter);
/* In the shim: replaces the socket pair `ends` (the shim's end, the
 * child's) with a new one, so that nothing sent on the old one (a dropped
 * seed's listener) is received. False when no new pair can be made. */
bool guard_channel_renew(int ends[2]);
/* The signals a shim ignores (boxd-shim.c); its command gets them back. */
extern const int shim_ignored_signals[];
extern const size_t shim_ignored_signal_count;
/* Answers one pending notification: refuses signals aimed at boxd, at any
 * shim, or at every process (-1). */
void guard_answer(struct shim *shim);

/* Stop: the command's whole tree gets `signal`, then SIGKILL after grace_ms. */
void shim_stop(struct shim *shim, int signal, int64_t grace_ms);

/* shim-maker.c: `boxd-shim --spares`. Returns only in a spare forked for
 * boxd, true, with its channel in *channel (stdin is /dev/null) and the
 * compiled guard filter (guard_prepare, NULL if it failed) in *guard_filter;
 * false when boxd is gone (the maker then exits). */
bool maker_run(int *channel, void **guard_filter);

/* shim-keep.c: `boxd-shim --keep-cgroup`, boxd-commands.service's process. */
int keep_cgroup(void);

#endif
