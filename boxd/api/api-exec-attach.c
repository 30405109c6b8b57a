/* api-exec-attach.c: GET /v1/exec/{id}/attach, a WebSocket to a running
 * command: its output (the terminal's recent output replayed first) as
 * binary frames, typed input back as binary frames, and JSON controls as
 * text frames: {"resize": [cols, rows]}, {"signal": "SIGINT"},
 * {"closeStdin": true}.
 *
 * boxd sends text frames of its own: {"type":"lost","bytes":N} when it
 * fell behind the output (the log has every byte: GET
 * /v1/exec/{id}/output), {"type":"error","message":...} for a control it
 * cannot do (the session stays), and {"type":"exit", ...the result} when
 * the command ends, before the close (1000). Several clients may attach at
 * once; the command outlives every one of them, and boxd too: its shim
 * holds the terminal. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "activity.h"
#include "api-exec.h"
#include "api.h"
#include "exec-log.h"
#include "exec.h"
#include "exit-record.h"
#include "router.h"
#include "ws-conn.h"
#include "xalloc.h"

/* Output waiting for the client past this pauses the command's stream:
 * the shim then counts what it cannot send (a `lost` frame says so). */
#define ATTACH_OUTPUT_HIGH (4u << 20)
/* Typed input the command does not read piles up to this, then the
 * session ends (1008): nobody types a megabyte ahead of a program. */
#define ATTACH_INPUT_MAX (1u << 20)
/* A command that ended before its replay reached the client: this much of
 * its log's end is sent instead, as much as a replay would have held. */
#define ATTACH_LATE_TAIL (512u << 10)

struct attach {
	struct event_base *base;
	struct ws_conn *ws;
	struct exec_job *job;
	struct exec_stream *stream;
	struct exec_input *pending; /* the input's copy, being asked for */
	int input_fd;               /* -1: none (yet, or at all: input_error says why) */
	bool terminal;
	char *input_error;
	struct evbuffer *queued; /* input the command has not taken yet */
	struct event *writable;
	uint64_t received; /* output bytes the command's stream gave */
	bool paused, ending;
	bool close_after; /* closeStdin came with input still on its way */
};

static void send_event(struct attach *a, cJSON *event)
{
	char *text = cJSON_PrintUnformatted(event);
	ws_send(a->ws, true, text, strlen(text));
	free(text);
	cJSON_Delete(event);
}

static void send_error(struct attach *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void send_error(struct attach *a, const char *fmt, ...)
{
	char message[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	cJSON *event = cJSON_CreateObject();
	cJSON_AddStringToObject(event, "type", "error");
	cJSON_AddStringToObject(event, "message", message);
	send_event(a, event);
}

/* ---- output ---- */

static void on_output(void *arg, bool is_stderr, const char *data, size_t length)
{
	struct attach *a = arg;
	a->received += length;
	ws_send(a->ws, false, data, length);
	if (!a->paused && ws_pending(a->ws) > ATTACH_OUTPUT_HIGH) {
		a->paused = true;
		exec_stream_pause(a->stream);
	}
}

static void on_lost(void *arg, double bytes)
{
	struct attach *a = arg;
	cJSON *event = cJSON_CreateObject();
	cJSON_AddStringToObject(event, "type", "lost");
	cJSON_AddNumberToObject(event, "bytes", bytes);
	send_event(a, event);
}

/* The end of the log, for a client that came as the command ended: the
 * shim answers a connection made after the end with the exit alone. */
static void send_late_tail(struct attach *a)
{
	struct exec_log log;
	if (!exec_log_open(&log, a->job))
		return;
	uint64_t end = exec_log_end(&log), at = exec_log_start(&log);
	if (end - at > ATTACH_LATE_TAIL)
		at = end - ATTACH_LATE_TAIL;
	char *buffer = xmalloc(64u << 10);
	ssize_t n;
	while (at < end && (n = exec_log_read(&log, buffer, 64u << 10, at)) > 0) {
		ws_send(a->ws, false, buffer, (size_t)n);
		at += (uint64_t)n;
	}
	free(buffer);
	exec_log_close(&log);
}

static void on_ended(void *arg)
{
	struct attach *a = arg;
	if (a->ending)
		return;
	a->ending = true;
	if (!a->received)
		send_late_tail(a);
	cJSON *event = exec_result_json(a->job, false);
	cJSON_DeleteItemFromObject(event, "state");
	cJSON_AddStringToObject(event, "type", "exit");
	send_event(a, event);
	ws_close(a->ws, 1000, "the command ended");
}

/* The shim serves 16 connections: this one was one too many. */
static void on_dropped(void *arg)
{
	struct attach *a = arg;
	a->ending = true;
	send_error(a,
		   "%s has as many clients attached as its shim serves (15); detach "
		   "one and retry",
		   a->job->id);
	ws_close(a->ws, 1013, "too many clients attached");
}

static const struct exec_stream_callbacks stream_callbacks = {on_output, on_lost, on_ended,
							      on_dropped};

static void on_drained(void *arg)
{
	struct attach *a = arg;
	if (a->paused && ws_pending(a->ws) < ATTACH_OUTPUT_HIGH / 4) {
		a->paused = false;
		exec_stream_resume(a->stream);
	}
}

/* ---- input ---- */

static void close_stdin_now(struct attach *a);

static void flush_input(struct attach *a)
{
	while (evbuffer_get_length(a->queued)) {
		int n = evbuffer_write(a->queued, a->input_fd);
		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			event_add(a->writable, NULL);
			return;
		}
		/* EPIPE, EIO: nothing reads the input any more. */
		evbuffer_drain(a->queued, evbuffer_get_length(a->queued));
		send_error(a, "%s no longer reads its input", a->job->id);
		break;
	}
	if (a->close_after)
		close_stdin_now(a);
}

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
	flush_input(arg);
}

static void on_input(void *arg, int fd, bool terminal, enum failure failure, const char *error)
{
	struct attach *a = arg;
	a->pending = NULL;
	if (fd < 0) {
		a->input_error = xstrdup(error);
		if (evbuffer_get_length(a->queued) || a->close_after) {
			/* Keys typed before the answer came: said now. */
			evbuffer_drain(a->queued, evbuffer_get_length(a->queued));
			a->close_after = false;
			send_error(a, "%s takes no input: %s", a->job->id, error);
		}
		return;
	}
	a->input_fd = fd;
	a->terminal = terminal;
	a->writable = event_new(a->base, fd, EV_WRITE, on_writable, a);
	flush_input(a); /* keys typed while the copy was on its way */
}

static void type_keys(struct attach *a, const uint8_t *data, size_t length)
{
	if (a->input_error) {
		send_error(a, "%s takes no input: %s", a->job->id, a->input_error);
		return;
	}
	if (evbuffer_get_length(a->queued) + length > ATTACH_INPUT_MAX) {
		ws_close(a->ws, 1008, "the command does not read its input");
		return;
	}
	evbuffer_add(a->queued, data, length);
	if (a->input_fd >= 0)
		flush_input(a);
}

/* ---- controls ---- */

static void control_resize(struct attach *a, const cJSON *size)
{
	const char *why = cJSON_GetArraySize(size) == 2
				  ? exec_terminal_size_check(cJSON_GetArrayItem(size, 0),
							     cJSON_GetArrayItem(size, 1))
				  : "it must be [cols, rows]";
	if (why) {
		send_error(a, "resize: %s", why);
		return;
	}
	if (!a->job->meta.pty) {
		send_error(a, "resize: %s runs without a terminal", a->job->id);
		return;
	}
	char text[32];
	snprintf(text, sizeof text, "%d %d", cJSON_GetArrayItem(size, 0)->valueint,
		 cJSON_GetArrayItem(size, 1)->valueint);
	exec_stream_control(a->stream, EXEC_CONTROL_RESIZE, text);
}

static void control_signal(struct attach *a, const char *name)
{
	int number = signal_number(name);
	if (number <= 0 || number >= 65) {
		send_error(a, "signal: %s is not a signal's name (SIGINT, SIGTERM, ...)", name);
		return;
	}
	exec_stream_control(a->stream, EXEC_CONTROL_SIGNAL, name);
}

/* After every byte typed before it is in: the end of the input comes last. */
static void close_stdin_now(struct attach *a)
{
	a->close_after = false;
	/* A pipe ends when its last writer goes: this copy first. */
	if (!a->terminal && a->input_fd >= 0) {
		event_free(a->writable);
		a->writable = NULL;
		close(a->input_fd);
		a->input_fd = -1;
		a->input_error = xstrdup("its stdin was closed");
	}
	exec_stream_control(a->stream, EXEC_CONTROL_CLOSE_STDIN, NULL);
}

static void control_close_stdin(struct attach *a)
{
	if (a->input_error) {
		send_error(a, "closeStdin: %s", a->input_error);
		return;
	}
	if (a->input_fd < 0 || evbuffer_get_length(a->queued)) {
		a->close_after = true; /* flush_input closes once the queue is out */
		return;
	}
	close_stdin_now(a);
}

static void control(struct attach *a, const uint8_t *data, size_t length)
{
	cJSON *json = cJSON_ParseWithLength((const char *)data, length);
	const cJSON *resize = cJSON_GetObjectItemCaseSensitive(json, "resize");
	const cJSON *signal = cJSON_GetObjectItemCaseSensitive(json, "signal");
	const cJSON *close_stdin = cJSON_GetObjectItemCaseSensitive(json, "closeStdin");
	if (cJSON_IsArray(resize))
		control_resize(a, resize);
	else if (cJSON_IsString(signal))
		control_signal(a, signal->valuestring);
	else if (cJSON_IsTrue(close_stdin))
		control_close_stdin(a);
	else
		send_error(a, "a text frame is a JSON control: {\"resize\": [cols, rows]}, "
			      "{\"signal\": \"SIGINT\"} or {\"closeStdin\": true}");
	cJSON_Delete(json);
}

static void on_message(void *arg, bool text, const uint8_t *data, size_t length)
{
	struct attach *a = arg;
	if (a->ending)
		return;
	if (text)
		control(a, data, length);
	else
		type_keys(a, data, length);
}

/* ---- the session ---- */

static void on_closed(void *arg)
{
	struct attach *a = arg;
	exec_stream_close(a->stream);
	exec_input_cancel(a->pending);
	if (a->writable)
		event_free(a->writable);
	if (a->input_fd >= 0)
		close(a->input_fd);
	evbuffer_free(a->queued);
	free(a->input_error);
	exec_release(a->job);
	activity_end(ACTIVITY_TERMINAL);
	free(a);
}

static const struct ws_conn_ops session_ops = {on_message, on_drained, on_closed};

static void handle_attach(struct api_request *req)
{
	struct exec_job *job = api_exec_find(req);
	if (!job)
		return;
	const char *id = job->id;
	if (job->state != EXEC_RUNNING) {
		api_reply_failure(req, FAILURE_CONFLICT,
				  "%s has ended: its output is at GET /v1/exec/%s/output, its "
				  "result at GET /v1/exec/%s",
				  id, id, id);
		return;
	}
	struct attach *a = xcalloc(1, sizeof *a);
	a->base = api_base(req);
	a->job = job;
	a->input_fd = -1;
	a->queued = evbuffer_new();
	a->ws = ws_accept(req, &session_ops, a);
	if (!a->ws) {
		evbuffer_free(a->queued);
		free(a);
		return;
	}
	exec_hold(job);
	activity_begin(ACTIVITY_TERMINAL);
	a->stream = exec_attach(job, &stream_callbacks, a);
	if (!a->stream) {
		on_ended(a); /* it ended on the way: its end is what there is to see */
		return;
	}
	struct exec_input *pending = exec_input(job, on_input, a);
	if (pending)
		a->pending = pending;
}

const struct api_route api_exec_attach_routes[] = {
	{"GET", "/v1/exec/{}/attach", API_REFUSED_WHILE_LOCKED, 0, handle_attach},
	{0},
};
