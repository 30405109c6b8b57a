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

struct api_request;

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

/* Runs boxd-archive with `args`, feeding it the request's body (input_fd
 * < 0) or `input_fd` (taken over) on stdin, collecting its stdout. Then
 * done() runs on the loop, once, and must answer the request. If the client
 * goes meanwhile the worker is killed (done() still runs; its answer is
 * discarded). */
void archive_call(struct api_request *req, const char *const args[], int input_fd,
		  size_t output_limit,
		  void (*done)(struct api_request *req, const struct archive_call_result *result,
			       void *arg),
		  void *arg);

#endif
