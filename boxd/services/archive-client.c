/* archive-client.c: starting boxd-archive for a call, feeding it, reading
 * what it says, and turning that into the typed results of
 * archive-client.h. The worker's argv and its answers are spelled here and
 * in archive-worker.c, nowhere else. */
#include "archive-client.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "config.h"
#include "helpers.h"
#include "protect.h"
#include "xalloc.h"

/* The largest diff answer: `limit` hex paths of up to 4096 bytes, and then
 * some. An extraction's answer is one short line. */
#define DIFF_ANSWER_LIMIT (64u << 20)
#define EXTRACT_ANSWER_LIMIT 4096u
/* A stream's reads: a download moves in pieces this big. */
#define STREAM_CHUNK (256u * 1024)

extern char **environ;

static struct event_base *loop;            /* given at archive_client_init */
static const struct boxd_config *settings; /* likewise */
static char *cache_path;                   /* RUN_DIR/hash-cache */

void archive_client_init(struct event_base *base, const struct boxd_config *config)
{
	loop = base;
	settings = config;
	free(cache_path);
	cache_path = xasprintf("%s/hash-cache", config->run_dir);
}

static const char *worker_program(void)
{
	static char *path;
	if (!path)
		path = helper_path("boxd-archive");
	return path;
}

static const char *box_user(void)
{
	return settings->user ? settings->user : "root";
}

/* ---- one call: a worker process, its output, its exit ---- */

enum call_kind { CALL_DIFF, CALL_EXTRACT, CALL_CREATE, CALL_SHA256 };

struct archive_call {
	enum call_kind kind;
	pid_t pid;
	int pid_fd, output_fd, error_fd;
	struct event *output_event, *exit_event;
	bool output_done, exited, cancelled;
	int status;       /* as waitpid() gives it; -1 unknown */
	char errors[512]; /* the first line of its stderr */
	/* diff and extract: the answer, collected */
	char *output;
	size_t output_length, output_limit;
	bool output_cut;
	/* create: the archive, streamed */
	const struct archive_stream_handlers *handlers;
	char *chunk;
	/* the caller */
	union {
		archive_diff_done_fn diff;
		archive_extract_done_fn extract;
		archive_sha256_done_fn sha256;
	} done;
	void *arg;
};

static void close_pair(int pair[2])
{
	for (int i = 0; i < 2; i++)
		if (pair[i] >= 0)
			close(pair[i]);
}

/* Starts `boxd-archive ARGS...` (NULL-terminated, without the program)
 * with `input_fd` as its stdin (-1: an empty pipe). False with a sentence
 * in `why`. */
static bool spawn_worker(struct archive_call *call, const char *const args[], int input_fd,
			 char *why, size_t why_size)
{
	int input[2] = {-1, -1}, output[2] = {-1, -1}, error[2] = {-1, -1};
	if ((input_fd < 0 && pipe2(input, O_CLOEXEC) < 0) || pipe2(output, O_CLOEXEC) < 0 ||
	    pipe2(error, O_CLOEXEC) < 0) {
		snprintf(why, why_size, "cannot make pipes for the archive worker: %s",
			 strerror(errno));
		close_pair(input), close_pair(output), close_pair(error);
		return false;
	}
	const char *argv[16] = {worker_program()};
	for (int i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, input_fd >= 0 ? input_fd : input[0], 0);
	posix_spawn_file_actions_adddup2(&actions, output[1], 1);
	posix_spawn_file_actions_adddup2(&actions, error[1], 2);
	posix_spawnattr_t attributes;
	helper_spawn_attributes(&attributes);
	pid_t pid;
	int status = posix_spawn(&pid, argv[0], &actions, &attributes, (char **)argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attributes);
	/* With no input, the worker reads an end at once: no end of it stays
	 * with boxd. */
	close_pair(input);
	close(output[1]);
	close(error[1]);
	if (status != 0) {
		snprintf(why, why_size, "cannot start the archive worker %s: %s", argv[0],
			 strerror(status));
		close(output[0]);
		close(error[0]);
		return false;
	}
	call->pid = pid;
	call->pid_fd = helper_pidfd(pid);
	call->output_fd = output[0];
	call->error_fd = error[0];
	/* A bigger pipe: a long diff answer or a download passes in a few
	 * wakeups instead of dozens (best effort; the default is 64 KiB). */
	fcntl(call->output_fd, F_SETPIPE_SZ, 1 << 20);
	fcntl(call->output_fd, F_SETFL, O_NONBLOCK);
	fcntl(call->error_fd, F_SETFL, O_NONBLOCK);
	if (call->pid_fd < 0) {
		snprintf(why, why_size, "cannot watch the archive worker: %s", strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(call->output_fd);
		close(call->error_fd);
		return false;
	}
	protect_process(pid);
	return true;
}

static void trim_heap(evutil_socket_t fd, short events, void *arg)
{
	malloc_trim(0);
}

static void answer_diff(struct archive_call *call);
static void answer_extract(struct archive_call *call);
static void answer_sha256(struct archive_call *call);

static void call_free(struct archive_call *call)
{
	free(call->output);
	free(call->chunk);
	free(call);
}

/* Once the worker has exited and its output is read to the end: its
 * result, to the caller. */
static void finish_if_done(struct archive_call *call)
{
	if (!call->output_done || !call->exited)
		return;
	(void)!read(call->error_fd, call->errors, sizeof call->errors - 1);
	char *newline = strchr(call->errors, '\n');
	if (newline)
		*newline = '\0';
	close(call->error_fd);
	close(call->output_fd);
	event_free(call->output_event);
	event_free(call->exit_event);
	if (call->kind == CALL_CREATE) {
		call->handlers->end(call->arg, call->status == 0,
				    call->errors[0] ? call->errors : "the archive worker failed");
		call_free(call);
		return;
	}
	if (call->kind == CALL_DIFF)
		answer_diff(call);
	else if (call->kind == CALL_SHA256)
		answer_sha256(call);
	else
		answer_extract(call);
	call_free(call);
	/* The caller frees its input (a manifest, an upload's buffer) once
	 * done() has answered; then hand the heap back, so one big call does
	 * not leave boxd's resident size high. A single one-shot timer, not a
	 * poll. */
	struct timeval later = {.tv_usec = 200 * 1000};
	event_base_once(loop, -1, EV_TIMEOUT, trim_heap, NULL, &later);
}

static void collect(struct archive_call *call, const char *bytes, size_t length)
{
	size_t room = call->output_limit - call->output_length;
	size_t take = length < room ? length : room;
	call->output_cut |= take < length;
	call->output = xrealloc(call->output, call->output_length + take + 1);
	memcpy(call->output + call->output_length, bytes, take);
	call->output_length += take;
	call->output[call->output_length] = '\0';
}

static void on_output(evutil_socket_t fd, short events, void *arg)
{
	struct archive_call *call = arg;
	char small[16384];
	char *buffer = call->chunk ? call->chunk : small;
	size_t size = call->chunk ? STREAM_CHUNK : sizeof small;
	ssize_t got = read(fd, buffer, size);
	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (got > 0) {
		if (call->kind != CALL_CREATE)
			collect(call, buffer, (size_t)got);
		else if (!call->cancelled)
			call->handlers->data(call->arg, buffer, (size_t)got);
		return;
	}
	event_del(call->output_event);
	call->output_done = true;
	finish_if_done(call);
}

static void on_exit_event(evutil_socket_t fd, short events, void *arg)
{
	struct archive_call *call = arg;
	call->status = helper_reap(call->pid_fd);
	call->pid_fd = -1;
	unprotect_process(call->pid);
	call->exited = true;
	finish_if_done(call);
}

/* Starts the worker for `call` and watches it; false (the call not freed)
 * when it could not start. */
static bool call_start(struct archive_call *call, const char *const args[], int input_fd, char *why,
		       size_t why_size)
{
	bool started = spawn_worker(call, args, input_fd, why, why_size);
	if (input_fd >= 0)
		close(input_fd); /* the worker has its own copy */
	if (!started)
		return false;
	call->output_event =
		event_new(loop, call->output_fd, EV_READ | EV_PERSIST, on_output, call);
	call->exit_event = event_new(loop, call->pid_fd, EV_READ, on_exit_event, call);
	event_add(call->output_event, NULL);
	event_add(call->exit_event, NULL);
	return true;
}

void archive_call_cancel(struct archive_call *call)
{
	call->cancelled = true;
	if (!call->exited)
		kill(call->pid, SIGKILL);
	if (!call->output_done)
		event_add(call->output_event, NULL); /* read to the end, a paused stream too */
}

void archive_call_pause(struct archive_call *call)
{
	if (!call->cancelled) /* a cancelled call reads to the end */
		event_del(call->output_event);
}

void archive_call_resume(struct archive_call *call)
{
	if (!call->output_done)
		event_add(call->output_event, NULL);
}

/* ---- what the answers say ---- */

/* The worker's {"error":{"code","message"}}: its failure and sentence, or
 * false when `json` is no such error. */
static bool worker_error(const cJSON *json, enum failure *failure, const char **message)
{
	cJSON *error = cJSON_GetObjectItem(json, "error");
	if (!error)
		return false;
	*failure = failure_from_code(cJSON_GetStringValue(cJSON_GetObjectItem(error, "code")));
	*message = cJSON_GetStringValue(cJSON_GetObjectItem(error, "message"));
	return true;
}

static void answer_diff(struct archive_call *call)
{
	struct archive_diff_answer answer = {.json = call->output ? call->output : "",
					     .length = call->output_length};
	/* The usual answer, as it came: no parse. */
	answer.ok = call->status == 0 && !call->output_cut &&
		    (strncmp(answer.json, "{\"changed\":", 11) == 0 ||
		     strncmp(answer.json, "{\"all\":", 7) == 0);
	cJSON *json = answer.ok ? NULL : cJSON_ParseWithLength(answer.json, answer.length);
	char why[1024];
	if (json && worker_error(json, &answer.failure, &answer.message)) {
		if (!answer.message)
			answer.message = "the diff failed";
	} else if (json && !call->output_cut) {
		answer.ok = true; /* an answer, though the exit was not clean */
	} else if (!answer.ok) {
		snprintf(why, sizeof why,
			 "the diff worker stopped without an answer (status %d%s%s)", call->status,
			 call->errors[0] ? ": " : "", call->errors);
		answer.failure = FAILURE_INTERNAL;
		answer.message = why;
	}
	call->done.diff(call->arg, &answer);
	cJSON_Delete(json);
}

static void answer_extract(struct archive_call *call)
{
	cJSON *json = cJSON_ParseWithLength(call->output ? call->output : "", call->output_length);
	struct archive_extract_answer answer = {.answered = true};
	char why[1024];
	if (json && cJSON_IsTrue(cJSON_GetObjectItem(json, "ok"))) {
		answer.ok = true;
		answer.files = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(json, "files"));
		answer.bytes = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(json, "bytes"));
	} else if (worker_error(json, &answer.failure, &answer.message)) {
		if (!answer.message)
			answer.message = "the archive worker failed";
	} else {
		snprintf(why, sizeof why,
			 "the archive worker stopped without a result (status %d%s%s)",
			 call->status, call->errors[0] ? ": " : "", call->errors);
		answer = (struct archive_extract_answer){.failure = FAILURE_INTERNAL,
							 .message = why};
	}
	call->done.extract(call->arg, &answer);
	cJSON_Delete(json);
}

static void answer_sha256(struct archive_call *call)
{
	cJSON *json = cJSON_ParseWithLength(call->output ? call->output : "", call->output_length);
	struct archive_sha256_answer answer = {
		.hex = cJSON_GetStringValue(cJSON_GetObjectItem(json, "sha256"))};
	char why[1024];
	if (answer.hex && strlen(answer.hex) == 64) {
		answer.ok = true;
		answer.size = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(json, "size"));
	} else if (worker_error(json, &answer.failure, &answer.message)) {
		if (!answer.message)
			answer.message = "the hash failed";
	} else {
		snprintf(why, sizeof why,
			 "the hash worker stopped without a result (status %d%s%s)", call->status,
			 call->errors[0] ? ": " : "", call->errors);
		answer =
			(struct archive_sha256_answer){.failure = FAILURE_INTERNAL, .message = why};
	}
	call->done.sha256(call->arg, &answer);
	cJSON_Delete(json);
}

/* A call whose worker did not start: done() hears it now, as a worker that
 * ended without a word (status -1, the reason as its stderr). */
static struct archive_call *not_started(struct archive_call *call, const char *why)
{
	call->status = -1;
	snprintf(call->errors, sizeof call->errors, "%s", why);
	if (call->kind == CALL_DIFF)
		answer_diff(call);
	else if (call->kind == CALL_SHA256)
		answer_sha256(call);
	else
		answer_extract(call);
	call_free(call);
	return NULL;
}

/* ---- the calls ---- */

struct archive_call *archive_client_diff(const char *dest, unsigned long limit, int manifest_fd,
					 archive_diff_done_fn done, void *arg)
{
	struct archive_call *call = xcalloc(1, sizeof *call);
	*call = (struct archive_call){.kind = CALL_DIFF,
				      .output_limit = DIFF_ANSWER_LIMIT,
				      .done.diff = done,
				      .arg = arg};
	char limit_text[24], why[256];
	snprintf(limit_text, sizeof limit_text, "%lu", limit);
	const char *args[] = {"diff",     settings->work_dir, dest[0] ? dest : ".", limit_text,
			      cache_path, "--user",           box_user(),           NULL};
	if (!call_start(call, args, manifest_fd, why, sizeof why))
		return not_started(call, why);
	return call;
}

struct archive_call *archive_client_extract(const char *dest, int input_fd,
					    archive_extract_done_fn done, void *arg)
{
	struct archive_call *call = xcalloc(1, sizeof *call);
	*call = (struct archive_call){.kind = CALL_EXTRACT,
				      .output_limit = EXTRACT_ANSWER_LIMIT,
				      .done.extract = done,
				      .arg = arg};
	char why[256];
	const char *args[] = {"extract",  settings->work_dir, dest[0] ? dest : ".", "--user",
			      box_user(), "--cache",          cache_path,           NULL};
	if (!call_start(call, args, input_fd, why, sizeof why))
		return not_started(call, why);
	return call;
}

struct archive_call *archive_client_sha256(int input_fd, archive_sha256_done_fn done, void *arg)
{
	struct archive_call *call = xcalloc(1, sizeof *call);
	*call = (struct archive_call){.kind = CALL_SHA256,
				      .output_limit = EXTRACT_ANSWER_LIMIT,
				      .done.sha256 = done,
				      .arg = arg};
	char why[256];
	const char *args[] = {"sha256", settings->work_dir, "-", NULL};
	if (!call_start(call, args, input_fd, why, sizeof why))
		return not_started(call, why);
	return call;
}

struct archive_call *archive_client_create(const char *path,
					   const struct archive_stream_handlers *handlers,
					   void *arg, char *why, size_t why_size)
{
	struct archive_call *call = xcalloc(1, sizeof *call);
	*call = (struct archive_call){.kind = CALL_CREATE,
				      .handlers = handlers,
				      .arg = arg,
				      .chunk = xmalloc(STREAM_CHUNK)};
	const char *args[] = {"create", settings->work_dir, path, NULL};
	if (!call_start(call, args, -1, why, why_size)) {
		call_free(call);
		return NULL;
	}
	return call;
}
