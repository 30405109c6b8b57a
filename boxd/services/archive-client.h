/* archive-client.h: starting boxd-archive (the sandboxed tar.gz worker) from
 * boxd. Call from the loop thread only. */
#ifndef BOXD_ARCHIVE_CLIENT_H
#define BOXD_ARCHIVE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct event_base;

/* Worker calls watch their pipes and the worker's exit on `base`. */
void archive_client_init(struct event_base *base);

struct archive_process {
	pid_t pid;
	int pid_fd;    /* readable once the worker has exited (pidfd) */
	int input_fd;  /* our end of its stdin, non-blocking; -1 if given a file */
	int output_fd; /* our end of its stdout, non-blocking */
	int error_fd;  /* our end of its stderr, non-blocking */
};

/* Starts `boxd-archive ARGS...` (args NULL-terminated, without the program).
 * When `input_file_fd` >= 0 the worker reads it as stdin, else a pipe is
 * made. False with a sentence in `why` on failure. */
bool archive_run_start(const char *const args[], int input_file_fd,
		       struct archive_process *process, char *why, size_t why_size);

/* After pid_fd became readable: the exit status as waitpid() gives it, or
 * -1 when it could not be read. Closes pid_fd. */
int archive_run_reap(struct archive_process *process);

/* The worker's program path, as helper_path() finds it (helpers.h). */
const char *archive_run_program(void);

/* What a finished worker left: its stdout (at most the limit asked for),
 * its exit status (-1 unknown, else as waitpid() gives it) and the first
 * line of its stderr. */
struct archive_call_result {
	const char *output;
	size_t output_length;
	bool output_cut; /* there was more than the limit */
	int status;
	const char *errors;
};

typedef void (*archive_call_done_fn)(const struct archive_call_result *result, void *arg);
struct archive_call;

/* Runs boxd-archive with `args`, feeding it `input` (`input_length` bytes,
 * kept, not copied, until done() runs) or, when `input_fd` >= 0, that file
 * (taken over) on stdin, and collecting its stdout. done() runs on the loop,
 * once; the call is freed after it. NULL when the worker could not start:
 * done() has run already then. */
struct archive_call *archive_call(const char *const args[], const void *input,
				  size_t input_length, int input_fd, size_t output_limit,
				  archive_call_done_fn done, void *arg);
/* The caller's input is going away (its client left): stops feeding it and
 * kills the worker. done() still runs, later. */
void archive_call_cancel(struct archive_call *call);

#endif
