#include "archive-client.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "helpers.h"
#include "protect.h"
#include "xalloc.h"


extern char **environ;

const char *archive_run_program(void)
{
	static char *path;
	if (!path)
		path = helper_path("boxd-archive");
	return path;
}

static void close_pair(int pair[2])
{
	for (int i = 0; i < 2; i++)
		if (pair[i] >= 0)
			close(pair[i]);
}

bool archive_run_start(const char *const args[], int input_file_fd,
		       struct archive_process *process, char *why, size_t why_size)
{
	int input[2] = {-1, -1}, output[2] = {-1, -1}, error[2] = {-1, -1};
	if ((input_file_fd < 0 && pipe2(input, O_CLOEXEC) < 0) || pipe2(output, O_CLOEXEC) < 0 ||
	    pipe2(error, O_CLOEXEC) < 0) {
		snprintf(why, why_size, "cannot make pipes for the archive worker: %s", strerror(errno));
		close_pair(input), close_pair(output), close_pair(error);
		return false;
	}
	const char *argv[16] = {archive_run_program()};
	for (int i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, input_file_fd >= 0 ? input_file_fd : input[0], 0);
	posix_spawn_file_actions_adddup2(&actions, output[1], 1);
	posix_spawn_file_actions_adddup2(&actions, error[1], 2);
	posix_spawnattr_t attributes;
	helper_spawn_attributes(&attributes);
	pid_t pid;
	int status = posix_spawn(&pid, argv[0], &actions, &attributes, (char **)argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attributes);
	if (input[0] >= 0)
		close(input[0]);
	close(output[1]);
	close(error[1]);
	if (status != 0) {
		snprintf(why, why_size, "cannot start the archive worker %s: %s", argv[0], strerror(status));
		if (input[1] >= 0)
			close(input[1]);
		close(output[0]);
		close(error[0]);
		return false;
	}
	process->pid = pid;
	process->pid_fd = helper_pidfd(pid);
	process->input_fd = input[1];
	process->output_fd = output[0];
	process->error_fd = error[0];
	/* Bigger pipes: a 1.5 MB manifest or a download passes in a few wakeups
	 * instead of dozens (best effort; the default is 64 KiB). */
	if (process->input_fd >= 0) {
		fcntl(process->input_fd, F_SETPIPE_SZ, 1 << 20);
		fcntl(process->input_fd, F_SETFL, O_NONBLOCK);
	}
	fcntl(process->output_fd, F_SETPIPE_SZ, 1 << 20);
	fcntl(process->output_fd, F_SETFL, O_NONBLOCK);
	fcntl(process->error_fd, F_SETFL, O_NONBLOCK);
	if (process->pid_fd < 0) {
		snprintf(why, why_size, "cannot watch the archive worker: %s", strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		if (process->input_fd >= 0)
			close(process->input_fd);
		close(process->output_fd);
		close(process->error_fd);
		return false;
	}
	protect_process(pid);
	return true;
}

int archive_run_reap(struct archive_process *process)
{
	int status = helper_reap(process->pid_fd);
	process->pid_fd = -1;
	unprotect_process(process->pid);
	return status;
}

/* ---- a call: body in, JSON out ---- */

struct archive_call {
	struct archive_process process;
	struct event *input_event, *output_event, *exit_event;
	const char *body; /* the caller's input, while feeding it */
	size_t body_length, body_sent;
	char *output;
	size_t output_length, output_limit;
	bool output_cut, output_done, exited;
	int status;
	char errors[512];
	archive_call_done_fn done;
	void *arg;
};

static void close_call_input(struct archive_call *call)
{
	if (call->input_event)
		event_free(call->input_event);
	call->input_event = NULL;
	if (call->process.input_fd >= 0)
		close(call->process.input_fd);
	call->process.input_fd = -1;
}

static void trim_heap(evutil_socket_t fd, short events, void *arg);

static struct event_base *loop; /* given at archive_client_init */

void archive_client_init(struct event_base *base)
{
	loop = base;
}

static void call_finish_if_done(struct archive_call *call)
{
	if (!call->output_done || !call->exited)
		return;
	close_call_input(call);
	(void)!read(call->process.error_fd, call->errors, sizeof call->errors - 1);
	char *newline = strchr(call->errors, '\n');
	if (newline)
		*newline = '\0';
	close(call->process.error_fd);
	close(call->process.output_fd);
	event_free(call->output_event);
	event_free(call->exit_event);
	struct archive_call_result result = {
		.output = call->output ? call->output : "",
		.output_length = call->output_length,
		.output_cut = call->output_cut,
		.status = call->status,
		.errors = call->errors,
	};
	call->done(&result, call->arg);
	free(call->output);
	free(call);
	/* The caller frees its input (a manifest, an upload's buffer) once
	 * done() has answered; then hand the heap back, so one big call does not leave boxd's
	 * resident size high. A single one-shot timer, not a poll. */
	struct timeval later = {.tv_usec = 200 * 1000};
	event_base_once(loop, -1, EV_TIMEOUT, trim_heap, NULL, &later);
}

static void trim_heap(evutil_socket_t fd, short events, void *arg)
{
	malloc_trim(0);
}

static void on_call_input(evutil_socket_t fd, short events, void *arg)
{
	struct archive_call *call = arg;
	while (call->body_sent < call->body_length) {
		ssize_t wrote = write(fd, call->body + call->body_sent,
				      call->body_length - call->body_sent);
		if (wrote < 0) {
			if (errno == EAGAIN)
				return;
			break; /* EPIPE: the worker stopped reading; its result says why */
		}
		call->body_sent += (size_t)wrote;
	}
	close_call_input(call);
}

static void on_call_output(evutil_socket_t fd, short events, void *arg)
{
	struct archive_call *call = arg;
	char buffer[16384];
	ssize_t got = read(fd, buffer, sizeof buffer);
	if (got < 0 && errno == EAGAIN)
		return;
	if (got > 0) {
		size_t room = call->output_limit - call->output_length;
		size_t take = (size_t)got < room ? (size_t)got : room;
		call->output_cut |= take < (size_t)got;
		call->output = xrealloc(call->output, call->output_length + take + 1);
		memcpy(call->output + call->output_length, buffer, take);
		call->output_length += take;
		call->output[call->output_length] = '\0';
		return;
	}
	event_del(call->output_event);
	call->output_done = true;
	call_finish_if_done(call);
}

static void on_call_exit(evutil_socket_t fd, short events, void *arg)
{
	struct archive_call *call = arg;
	call->status = archive_run_reap(&call->process);
	call->exited = true;
	call_finish_if_done(call);
}

void archive_call_cancel(struct archive_call *call)
{
	/* The input goes with the caller: stop feeding it at once. */
	call->body = NULL;
	call->body_length = call->body_sent = 0;
	close_call_input(call);
	kill(call->process.pid, SIGKILL);
}

struct archive_call *archive_call(const char *const args[], const void *input,
				  size_t input_length, int input_fd, size_t output_limit,
				  archive_call_done_fn done, void *arg)
{
	struct archive_call *call = xcalloc(1, sizeof *call);
	call->done = done;
	call->arg = arg;
	call->output_limit = output_limit;
	char why[256];
	bool started = archive_run_start(args, input_fd, &call->process, why, sizeof why);
	if (input_fd >= 0)
		close(input_fd);
	if (!started) {
		struct archive_call_result result = {.output = "", .status = -1, .errors = why};
		done(&result, arg);
		free(call);
		return NULL;
	}
	struct event_base *base = loop;
	if (call->process.input_fd >= 0) {
		call->body = input;
		call->body_length = input_length;
		call->input_event = event_new(base, call->process.input_fd, EV_WRITE | EV_PERSIST,
					      on_call_input, call);
		event_add(call->input_event, NULL);
	}
	call->output_event = event_new(base, call->process.output_fd, EV_READ | EV_PERSIST,
				       on_call_output, call);
	event_add(call->output_event, NULL);
	call->exit_event = event_new(base, call->process.pid_fd, EV_READ, on_call_exit, call);
	event_add(call->exit_event, NULL);
	return call;
}
