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

/* First and last halves of one stream, for a foreground result. */
struct shim_capture {
	size_t half;          /* bytes kept at each end; 0: capture nothing */
	char *head;
	size_t head_length;
	char *tail;           /* a ring of `half` bytes */
	size_t tail_length, tail_start;
	uint64_t total;
};

struct shim_stream {
	int fd;               /* read end of the command's pipe; -1 at EOF */
	char kind;            /* SHIM_MSG_STDOUT or SHIM_MSG_STDERR */
	struct shim_capture capture;
	struct mask_stream *masker; /* NULL until masking is available */
};

struct shim_log {
	int fd;               /* -1 when it could not be written */
	uint64_t size;        /* current file size */
	uint64_t cap;
	uint64_t total;       /* bytes of output over the command's life */
	char *error;          /* why the log is incomplete, or NULL */
	char *path;
};

#define SHIM_MAX_CLIENTS 16

struct shim_client {
	int fd;
	bool subscribed;
	uint64_t lost;        /* bytes not streamed since the last LOST notice */
};

struct shim {
	struct shim_spec spec;
	struct cgroup_job job;
	pid_t pid;            /* the command's shell */
	int64_t started_at, started_monotonic;
	struct shim_stream out, err;
	struct shim_log log;
	int stdin_fd;         /* write end while stdin text is pending, else -1 */
	size_t stdin_written;
	int listen_fd;
	struct shim_client clients[SHIM_MAX_CLIENTS];
	int guard_fd;         /* seccomp notification fd, -1 without */
	bool born_in_cgroup;  /* the command was cloned straight into its cgroup v2 */
	bool exited;          /* the shell has been reaped */
	int wait_status;
	bool timed_out;
	int64_t kill_at;      /* monotonic ms of the pending SIGKILL, 0: none */
	int64_t timeout_at;   /* monotonic ms of the timeout, 0: none */
	int64_t held_until;   /* output is not read before a subscriber comes or then */
	bool recorded;        /* the exit record is written (or in exit_notice) */
	char *exit_notice;    /* the record, when its file could not be written */
	size_t exit_notice_length;
};

/* shim-run.c */
/* Forks the command; on failure returns false with a code and a sentence. */
bool run_start(struct shim *shim, char *code, size_t code_size, char *error, size_t error_size);
/* Signals the whole tree: the cgroup when there is one, else the process
 * group and every descendant found under the shim in /proc. */
void run_signal_tree(struct shim *shim, int signal);

/* shim-output.c */
void output_init(struct shim *shim);
/* Reads what the pipe has; false at EOF. */
bool output_read(struct shim *shim, struct shim_stream *stream);
/* Flushes the maskers and writes the captures into the state dir. */
void output_finish(struct shim *shim);
void output_set_secrets(struct shim *shim, const char *values, size_t length);
/* `text` masked with the current secrets; caller frees. */
char *output_mask_text(const char *text);
/* Marks the capture truncated (for the exit record). */
bool output_truncated(const struct shim *shim);

/* shim-log.c */
void log_file_open(struct shim_log *log, const char *path, uint64_t cap);
void log_file_write(struct shim_log *log, const char *data, size_t length);
void log_file_close(struct shim_log *log);

/* shim-socket.c */
bool socket_listen(struct shim *shim, char *error, size_t error_size);
void socket_accept(struct shim *shim);
/* A client's message that the main loop acts on: a stop or new secrets. */
struct shim_request {
	char kind;     /* SHIM_MSG_STOP or SHIM_MSG_SECRETS */
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

/* shim-guard.c */
/* In the command's child, before exec: installs the seccomp filter that hands
 * every signal-sending syscall to the shim, and sends the notification fd
 * over `channel`. Async-signal-safe enough for a child of a single-threaded
 * parent. False when the kernel refuses. */
bool guard_install(int channel);
/* In the shim: receives the notification fd from `channel`. */
int guard_receive(int channel);
/* Receives one descriptor (SCM_RIGHTS) from `channel`; -1 at its end. */
int receive_fd(int channel);
/* Answers one pending notification: refuses signals aimed at boxd, at any
 * shim, or at every process (-1). */
void guard_answer(struct shim *shim);

/* Stop: the command's whole tree gets `signal`, then SIGKILL after grace_ms. */
void shim_stop(struct shim *shim, int signal, int64_t grace_ms);

/* shim-keep.c: `boxd-shim --keep-cgroup`, boxd-commands.service's process. */
int keep_cgroup(void);

#endif
