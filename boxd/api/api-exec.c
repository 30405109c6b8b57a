/* api-exec.c: POST /v1/exec and GET /v1/exec/{id}. */
#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "router.h"
#include "api-alive.h"
#include "api-exec.h"
#include "clock.h"
#include "exec.h"
#include "redact-json.h"
#include "redact.h"
#include "steps.h"
#include "text.h"
#include "utf8.h"
#include "xalloc.h"

#define EXEC_DEFAULT_TIMEOUT_SEC 600
#define EXEC_MAX_TIMEOUT_SEC 3600
#define EXEC_DEFAULT_MAX_OUTPUT (256u * 1024)
#define EXEC_MAX_OUTPUT (64u << 20)
/* execve(2) refuses one string over 128 KiB and a total near 2 MiB. */
#define EXEC_MAX_ENV_ENTRY (128u * 1024)
#define EXEC_MAX_ENV_TOTAL (1u << 20)
/* memory.max below a few MiB cannot even start bash; 2^50 (1 PiB) is "any". */
#define EXEC_MIN_MEMORY_MAX (4.0 * 1024 * 1024)
#define EXEC_MAX_MEMORY_MAX 1125899906842624.0
#define EXEC_STREAM_HIGH (1u << 20)

/* ---- the request ---- */

static bool parse_env(struct api_request *req, const cJSON *env, struct exec_request *r)
{
	if (!env)
		return true;
	if (!cJSON_IsObject(env)) {
		api_reply_bad_request(req, "env must be an object of NAME: \"value\" strings");
		return false;
	}
	size_t total = 0;
	for (const cJSON *item = env->child; item; item = item->next) {
		if (!text_is_env_name(item->string) || !cJSON_IsString(item)) {
			api_reply_bad_request(req,
					      "env entry %.64s must have a name of letters, digits "
					      "and _ and a string value",
					      item->string);
			return false;
		}
		size_t length = strlen(item->string) + 1 + strlen(item->valuestring);
		total += length + 1;
		if (length > EXEC_MAX_ENV_ENTRY || total > EXEC_MAX_ENV_TOTAL) {
			api_reply_bad_request(
				req,
				"env is too large: at most %u KiB per entry and "
				"%u KiB in all; pass big data through stdin or a file",
				EXEC_MAX_ENV_ENTRY >> 10, EXEC_MAX_ENV_TOTAL >> 10);
			return false;
		}
		r->env = xrealloc(r->env, (r->env_count + 1) * sizeof *r->env);
		r->env[r->env_count++] = xasprintf("%s=%s", item->string, item->valuestring);
	}
	return true;
}

static bool parse_user(struct api_request *req, const cJSON *user, struct exec_request *r)
{
	char given[64], error[512];
	if (!user)
		given[0] = '\0';
	else if (cJSON_IsString(user) && *user->valuestring && strlen(user->valuestring) < 64)
		snprintf(given, sizeof given, "%s", user->valuestring);
	else if (cJSON_IsNumber(user) && user->valuedouble >= 0 && user->valuedouble < 4294967295.0)
		snprintf(given, sizeof given, "%u", (unsigned)user->valuedouble);
	else {
		api_reply_bad_request(req, "user must be a user name or a uid");
		return false;
	}
	if (!exec_request_user(r, given[0] ? given : NULL, error, sizeof error)) {
		api_reply_bad_request(req, "%s", error);
		return false;
	}
	return true;
}

static bool parse_cwd(struct api_request *req, const cJSON *cwd, struct exec_request *r)
{
	if (cwd && !cJSON_IsString(cwd) && !cJSON_IsNull(cwd)) {
		api_reply_bad_request(req, "cwd must be a string");
		return false;
	}
	const char *given = cJSON_GetStringValue(cwd);
	if (given && !*given)
		given = NULL;
	enum failure failure;
	char error[PATH_MAX + 128];
	if (!exec_request_cwd(r, given, &failure, error, sizeof error)) {
		api_reply_failure(req, failure, "%s", error);
		return false;
	}
	return true;
}

static bool parse_integer(struct api_request *req, const cJSON *body, const char *name, double low,
			  double high, double fallback, double *value)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(body, name);
	*value = fallback;
	if (!item || cJSON_IsNull(item))
		return true;
	if (!cJSON_IsNumber(item) || item->valuedouble != (double)(long long)item->valuedouble ||
	    item->valuedouble < low || item->valuedouble > high) {
		api_reply_bad_request(req, "%s must be a whole number from %.0f to %.0f", name, low,
				      high);
		return false;
	}
	*value = item->valuedouble;
	return true;
}

/* "stdin": a text fed then closed, or {"stream": true}: kept open. */
static bool parse_stdin(struct api_request *req, const cJSON *item, struct exec_request *r)
{
	if (!item || cJSON_IsNull(item))
		return true;
	if (cJSON_IsString(item)) {
		r->stdin_length = strlen(item->valuestring);
		r->stdin_data = xstrdup(item->valuestring);
		return true;
	}
	const cJSON *stream = cJSON_GetObjectItemCaseSensitive(item, "stream");
	if (!cJSON_IsObject(item) || !cJSON_IsBool(stream) || cJSON_GetArraySize(item) != 1) {
		api_reply_bad_request(req, "stdin must be a string, or {\"stream\": true} to keep "
					   "it open (POST /v1/exec/{id}/stdin)");
		return false;
	}
	r->stdin_stream = cJSON_IsTrue(stream);
	return true;
}

/* "pty": {"cols": C, "rows": R}: the command runs on a terminal that size. */
static bool parse_pty(struct api_request *req, const cJSON *item, struct exec_request *r)
{
	if (!item || cJSON_IsNull(item))
		return true;
	const cJSON *cols = cJSON_GetObjectItemCaseSensitive(item, "cols");
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(item, "rows");
	const char *why = exec_terminal_size_check(cols, rows);
	if (!cJSON_IsObject(item) || why) {
		api_reply_bad_request(req, "pty must be {\"cols\": C, \"rows\": R}: %s",
				      why ? why : "an object");
		return false;
	}
	r->pty_cols = (unsigned)cols->valuedouble;
	r->pty_rows = (unsigned)rows->valuedouble;
	return true;
}

static struct exec_request *parse_request(struct api_request *req)
{
	cJSON *body = api_body_json(req);
	if (!body)
		return NULL;
	struct exec_request *r = xcalloc(1, sizeof *r);
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(body, "cmd");
	const cJSON *stdin_item = cJSON_GetObjectItemCaseSensitive(body, "stdin");
	const cJSON *background = cJSON_GetObjectItemCaseSensitive(body, "background");
	const cJSON *note = cJSON_GetObjectItemCaseSensitive(body, "note");
	double timeout, max_output, memory_max;
	bool ok = true;
	if (!cJSON_IsString(cmd) || !cmd->valuestring[strspn(cmd->valuestring, " \t\r\n")]) {
		api_reply_bad_request(req, "cmd is required: a non-empty string of bash");
		ok = false;
	} else if (background && !cJSON_IsBool(background)) {
		api_reply_bad_request(req, "background must be true or false");
		ok = false;
	} else if (cJSON_IsString(note) && strlen(note->valuestring) > EXEC_NOTE_MAX) {
		/* Refused, not cut: what a caller labels a command with comes back
		 * as given, or not at all. */
		api_reply_bad_request(req,
				      "note has %zu bytes; it takes at most %d (a label: put long "
				      "text in a file)",
				      strlen(note->valuestring), EXEC_NOTE_MAX);
		ok = false;
	}
	ok = ok && parse_integer(req, body, "timeoutSec", 1, EXEC_MAX_TIMEOUT_SEC,
				 EXEC_DEFAULT_TIMEOUT_SEC, &timeout);
	ok = ok && parse_integer(req, body, "maxOutputBytes", 1, EXEC_MAX_OUTPUT,
				 EXEC_DEFAULT_MAX_OUTPUT, &max_output);
	ok = ok && parse_integer(req, body, "memoryMaxBytes", EXEC_MIN_MEMORY_MAX,
				 EXEC_MAX_MEMORY_MAX, 0, &memory_max);
	if (ok && memory_max > 0 && !exec_memory_caps()) {
		api_reply_bad_request(req,
				      "memoryMaxBytes cannot be enforced here: the cgroup v2 "
				      "memory controller is not available for commands (see "
				      "docs/confinement.md); leave it out to run without a cap");
		ok = false;
	}
	ok = ok && parse_stdin(req, stdin_item, r);
	ok = ok && parse_pty(req, cJSON_GetObjectItemCaseSensitive(body, "pty"), r);
	ok = ok && parse_cwd(req, cJSON_GetObjectItemCaseSensitive(body, "cwd"), r);
	ok = ok && parse_user(req, cJSON_GetObjectItemCaseSensitive(body, "user"), r);
	ok = ok && parse_env(req, cJSON_GetObjectItemCaseSensitive(body, "env"), r);
	if (!ok) {
		exec_request_free(r);
		return NULL;
	}
	r->cmd = xstrdup(cmd->valuestring);
	r->timeout_ms = (int64_t)timeout * 1000;
	r->max_output_bytes = (size_t)max_output;
	r->memory_max_bytes = (uint64_t)memory_max;
	r->background = cJSON_IsTrue(background);
	r->note = cJSON_IsString(note) ? xstrdup(note->valuestring) : NULL;
	return r;
}

/* ---- one call in flight ---- */

struct exec_call {
	struct api_request *req;
	struct exec_job *job;
	struct exec_watch watch;
	bool watching;
	/* streaming */
	struct exec_stream *stream;
	struct api_alive *alive;
	/* Where the next byte received sits in the log: the shim writes each
	 * piece to the log in the order it sends it, and the stream starts at
	 * the first byte (held output), so counting what came and was lost
	 * numbers it as GET /v1/exec/{id}/output does. */
	uint64_t offset;
	/* An incomplete character at the end of the last piece, held for the
	 * next piece of the same stream (which continues it in the log too). */
	char carry[4];
	size_t carry_length;
	int carry_which;
	bool paused;
};

static void call_release(void *data)
{
	struct exec_call *call = data;
	if (call->watching)
		exec_unwatch(call->job, &call->watch);
	if (call->job)
		exec_release(call->job);
	exec_stream_close(call->stream);
	api_alive_free(call->alive);
	free(call);
}

static void on_foreground_end(void *arg, struct exec_job *job)
{
	struct exec_call *call = arg;
	call->watching = false;
	api_reply_json(call->req, 200, exec_result_json(job, true));
}

/* ---- streaming (NDJSON) ---- */

static void stream_event(struct exec_call *call, cJSON *event)
{
	redact_json(event);
	char *line = cJSON_PrintUnformatted(event);
	size_t length = strlen(line);
	line[length] = '\n'; /* replaces the NUL: sent as one chunk with its newline */
	api_stream_write(call->req, line, length + 1);
	free(line);
	cJSON_Delete(event);
}

static void send_alive(void *arg, cJSON *event)
{
	stream_event(arg, event);
}

/* `length` raw bytes at log offset `at`; "bytes" counts them as they are,
 * since "data" (invalid bytes made U+FFFD) may differ: a client resumes at
 * offset + bytes. */
static void emit_output(struct exec_call *call, int which, uint64_t at, const char *data,
			size_t length)
{
	char *text = utf8_sanitize(data, length, NULL);
	cJSON *event = cJSON_CreateObject();
	cJSON_AddStringToObject(event, "type", which ? "stderr" : "stdout");
	cJSON_AddNumberToObject(event, "offset", (double)at);
	cJSON_AddNumberToObject(event, "bytes", (double)length);
	cJSON_AddStringToObject(event, "data", text);
	free(text);
	stream_event(call, event);
}

/* A held character that the other stream (or a loss, or the end) follows
 * in the log goes out as it is: an event's bytes are one run of the log. */
static void flush_carry(struct exec_call *call)
{
	if (!call->carry_length)
		return;
	emit_output(call, call->carry_which, call->offset - call->carry_length, call->carry,
		    call->carry_length);
	call->carry_length = 0;
}

static void throttle(struct exec_call *call)
{
	if (api_stream_pending(call->req) > EXEC_STREAM_HIGH) {
		/* The client reads slowly: stop taking output (the shim counts
		 * what it cannot send) until the socket drains. */
		exec_stream_pause(call->stream);
		call->paused = true;
	}
}

static void stream_output(void *arg, bool is_stderr, const char *data, size_t length)
{
	struct exec_call *call = arg;
	int which = is_stderr;
	if (call->carry_length && call->carry_which != which)
		flush_carry(call);
	/* Join the previous piece's incomplete character, hold back this one's. */
	uint64_t at = call->offset - call->carry_length;
	size_t joined_length = call->carry_length + length;
	char *joined = xmalloc(joined_length);
	memcpy(joined, call->carry, call->carry_length);
	memcpy(joined + call->carry_length, data, length);
	call->offset += length;
	size_t whole = utf8_prefix_length(joined, joined_length);
	call->carry_length = joined_length - whole;
	call->carry_which = which;
	memcpy(call->carry, joined + whole, call->carry_length);
	if (whole)
		emit_output(call, which, at, joined, whole);
	free(joined);
	api_alive_rearm(call->alive);
	throttle(call);
}

static void stream_lost(void *arg, double bytes)
{
	struct exec_call *call = arg;
	flush_carry(call);
	call->offset += (uint64_t)bytes;
	cJSON *event = cJSON_CreateObject();
	cJSON_AddStringToObject(event, "type", "lost");
	cJSON_AddNumberToObject(event, "bytes", bytes);
	cJSON_AddStringToObject(event, "logPath", call->job->meta.log_path);
	stream_event(call, event);
	throttle(call);
}

/* The job has ended (exec read its record). */
static void stream_finish(void *arg)
{
	struct exec_call *call = arg;
	flush_carry(call); /* a character cut short by the end */
	cJSON *event = exec_result_json(call->job, false);
	cJSON_DeleteItemFromObject(event, "state");
	cJSON_AddStringToObject(event, "type", "exit");
	stream_event(call, event);
	api_stream_end(call->req);
}

static void on_stream_drained(struct api_request *req)
{
	struct exec_call *call = api_data(req);
	if (call && call->paused && api_stream_pending(req) < EXEC_STREAM_HIGH / 4) {
		call->paused = false;
		exec_stream_resume(call->stream);
	}
}

static void on_stream_gone(struct api_request *req)
{
	/* The command carries on; its result stays available by id. */
	api_stream_end(req);
}

static void stream_begin(struct exec_call *call)
{
	api_stream_start(call->req, 200, "application/x-ndjson", on_stream_drained);
	api_on_client_gone(call->req, on_stream_gone);
	cJSON *event = cJSON_CreateObject();
	cJSON_AddStringToObject(event, "type", "started");
	cJSON_AddStringToObject(event, "id", call->job->id);
	cJSON_AddNumberToObject(event, "pid", call->job->meta.pid);
	stream_event(call, event);
	call->alive = api_alive_new(api_base(call->req), send_alive, call);
	static const struct exec_stream_callbacks callbacks = {
		.output = stream_output,
		.lost = stream_lost,
		.ended = stream_finish,
	};
	call->stream = exec_subscribe(call->job, &callbacks, call);
	if (!call->stream)
		stream_finish(call); /* the shim is gone already: its record says how */
}

/* ---- the routes ---- */

static void on_started(void *arg, struct exec_job *job, const char *code, const char *error)
{
	struct exec_call *call = arg;
	if (!job) {
		api_reply_failure(call->req, failure_from_code(code), "%s", error);
		return;
	}
	call->job = job;
	exec_hold(job);
	if (job->meta.background) {
		cJSON *answer = cJSON_CreateObject();
		cJSON_AddStringToObject(answer, "bgId", job->id);
		cJSON_AddNumberToObject(answer, "pid", job->meta.pid);
		cJSON_AddStringToObject(answer, "logPath", job->meta.log_path);
		cJSON_AddNumberToObject(answer, "startedAt", (double)job->meta.started_at);
		api_reply_json(call->req, 200, answer);
		return;
	}
	const char *accept = api_header(call->req, "Accept");
	if (accept && strstr(accept, "application/x-ndjson")) {
		stream_begin(call);
		return;
	}
	call->watch = (struct exec_watch){.ended = on_foreground_end, .arg = call};
	call->watching = true;
	exec_watch(job, &call->watch);
}

/* A repeat of an X-Request-Id whose first call a restart of boxd cut: the
 * command it started (adopted since) is attached to, never run again. */
static bool resume_exec(struct api_request *req)
{
	const char *id = api_request_resumed(req);
	struct exec_job *job = id ? exec_find(id) : NULL;
	if (!job)
		return false; /* the first call ended before its command started */
	struct exec_call *call = xcalloc(1, sizeof *call);
	call->req = req;
	api_set_data(req, call, call_release);
	on_started(call, job, NULL, NULL);
	return true;
}

static void handle_exec(struct api_request *req)
{
	if (resume_exec(req))
		return;
	struct exec_request *request = parse_request(req);
	if (!request)
		return;
	api_body_release(req); /* the request has its own copies */
	const char *accept = api_header(req, "Accept");
	request->streaming =
		!request->background && accept && strstr(accept, "application/x-ndjson");
	struct exec_call *call = xcalloc(1, sizeof *call);
	call->req = req;
	api_set_data(req, call, call_release);
	/* Named before it starts, so a repeat after a crash of boxd finds it. */
	request->id = exec_new_id(request->background);
	api_request_bind(req, request->id);
	exec_start(request, on_started, call);
}

struct exec_job *api_exec_find(struct api_request *req)
{
	struct exec_job *job = exec_find(api_param(req, 0));
	if (!job)
		api_reply_not_found(req,
				    "no command %s: ids are kept an hour after the command ends",
				    api_param(req, 0));
	return job;
}

static void handle_get(struct api_request *req)
{
	struct exec_job *job = api_exec_find(req);
	if (!job)
		return;
	api_reply_json(req, 200, exec_result_json(job, true));
}

const struct api_route api_exec_routes[] = {
	{"POST", "/v1/exec", API_REFUSED_WHILE_LOCKED | API_IDEMPOTENT, 16u << 20, handle_exec},
	{"GET", "/v1/exec/{}", 0, 0, handle_get},
	{0},
};
