/* exec-terminal.c: a command's input while it runs: a copy of its open
 * stdin (or its terminal's master) asked of its shim, and closing it.
 *
 * The shim holds the command's end of its input for the command's whole
 * life, so a restart of boxd closes nothing the command reads; boxd asks
 * for a copy whenever it has bytes to write (POST /v1/exec/{id}/stdin, an
 * attached client's keys) and writes into it directly: a body streams
 * into the pipe at the pace the command reads it, through no one else. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "exec-internal.h"
#include "fd-passing.h"
#include "shim-protocol.h"
#include "xalloc.h"

/* A shim answers at once: one that does not within this is stuck. */
#define INPUT_ANSWER_SEC 5

const char *exec_terminal_size_check(const cJSON *cols, const cJSON *rows)
{
	const cJSON *both[2] = {cols, rows};
	const double most[2] = {SHIM_PTY_MAX_COLS, SHIM_PTY_MAX_ROWS};
	for (int i = 0; i < 2; i++) {
		if (!cJSON_IsNumber(both[i]))
			return i ? "rows must be a number" : "cols must be a number";
		double v = both[i]->valuedouble;
		if (v != (double)(long long)v || v < SHIM_PTY_MIN || v > most[i])
			return i ? "rows must be a whole number from 1 to 1000"
				 : "cols must be a whole number from 1 to 1000";
	}
	return NULL;
}

struct exec_input {
	int fd; /* the connection to the shim */
	struct event *answer;
	exec_input_fn done;
	void *arg;
};

static void input_free(struct exec_input *input)
{
	event_free(input->answer);
	close(input->fd);
	free(input);
}

static void input_failed(struct exec_input *input, enum failure failure, const char *error)
{
	exec_input_fn done = input->done;
	void *arg = input->arg;
	input_free(input);
	done(arg, -1, false, failure, error);
}

/* The shim's answer: the copy, or "CODE SENTENCE" saying why not. */
static void on_answer(evutil_socket_t fd, short what, void *arg)
{
	struct exec_input *input = arg;
	if (what & EV_TIMEOUT) {
		input_failed(input, FAILURE_INTERNAL, "the command's shim did not answer");
		return;
	}
	size_t length = 0;
	int passed = -1;
	char *message = fd_passing_receive_message(input->fd, 1024, &length, &passed);
	if (message && length > 0 && message[0] == SHIM_MSG_INPUT_FD && passed >= 0) {
		bool terminal = length == 4 && !memcmp(message + 1, "pty", 3);
		exec_input_fn done = input->done;
		void *done_arg = input->arg;
		free(message);
		input_free(input);
		done(done_arg, passed, terminal, FAILURE_INTERNAL, NULL); /* no failure: fd given */
		return;
	}
	if (passed >= 0)
		close(passed);
	char why[512] = "the command has ended";
	if (message && length > 1 && message[0] == SHIM_MSG_FAILED) {
		/* "CODE SENTENCE": the code says which of the shim's cases. */
		const char *text = memchr(message, ' ', length);
		size_t start = text ? (size_t)(text - message) + 1 : length;
		snprintf(why, sizeof why, "%.*s", (int)(length - start), message + start);
	}
	free(message);
	input_failed(input, FAILURE_CONFLICT, why);
}

struct exec_input *exec_input(struct exec_job *job, exec_input_fn done, void *arg)
{
	int fd = job->state == EXEC_RUNNING ? exec_connect(job) : -1;
	char ask = SHIM_MSG_INPUT_FD;
	if (fd < 0 || send(fd, &ask, 1, MSG_NOSIGNAL) != 1) {
		if (fd >= 0)
			close(fd);
		done(arg, -1, false, FAILURE_CONFLICT, "the command has ended");
		return NULL;
	}
	struct exec_input *input = xcalloc(1, sizeof *input);
	input->fd = fd;
	input->done = done;
	input->arg = arg;
	input->answer = event_new(exec_loop(), fd, EV_READ, on_answer, input);
	struct timeval bound = {INPUT_ANSWER_SEC, 0};
	event_add(input->answer, &bound);
	return input;
}

void exec_input_cancel(struct exec_input *input)
{
	if (input)
		input_free(input);
}

bool exec_close_stdin(struct exec_job *job)
{
	int fd = exec_connect(job);
	char message = SHIM_MSG_CLOSE_STDIN;
	/* Read by the shim even after this end is gone (a packet queued
	 * before the close stays readable). */
	bool sent = fd >= 0 && send(fd, &message, 1, MSG_NOSIGNAL) == 1;
	if (fd >= 0)
		close(fd);
	return sent;
}
