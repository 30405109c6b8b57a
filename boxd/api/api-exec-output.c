/* api-exec-output.c: GET /v1/exec/{id}/output, a command's log as NDJSON
 * from a byte offset, following it while the command runs.
 *
 * Offsets count the command's whole output (exec-log.h), so a client cut
 * off anywhere resumes at the last event's offset + bytes and misses
 * nothing. The log is read in pieces as the socket drains, never whole; at
 * its end, a follower waits on inotify for the log's dir (a 100 ms timer
 * where inotify cannot be had) and on the job's end. Events:
 *   {"type":"output","offset":N,"bytes":K,"data":"text"}
 *   {"type":"output","offset":N,"bytes":K,"encoding":"base64","data":"..."}
 *   {"type":"lost","bytes":M}   (offset N was older than what is kept)
 *   {"type":"alive","elapsedMs":T}   (after every 20 s without output)
 *   {"type":"exit", ...the streaming exec's exit fields} */
#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "router.h"
#include "api-alive.h"
#include "api-exec.h"
#include "base64.h"
#include "clock.h"
#include "exec-log.h"
#include "exec.h"
#include "redact-json.h"
#include "redact.h"
#include "utf8.h"
#include "xalloc.h"

/* What one event carries at most, and what waits in the socket's buffer
 * before reading stops until it drains (the router calls back below 64 KiB). */
#define OUTPUT_PIECE (64u << 10)
#define OUTPUT_HIGH (256u << 10)
/* Without inotify, and while a rotation is caught half-way. */
#define OUTPUT_POLL_MS 100
#define OUTPUT_RETRY_MS 10

struct output_call {
	struct api_request *req;
	struct exec_job *job;
	struct exec_watch watch;
	bool watching;
	bool follow;
	uint64_t offset; /* the next byte to send */
	char *log_name;  /* the log's file name, what inotify events are matched on */
	int inotify_fd;  /* -1: polled */
	struct event *notified;
	struct event *timer; /* the poll, or a retry */
	struct api_alive *alive;
};

static void call_release(void *data)
{
	struct output_call *call = data;
	if (call->watching)
		exec_unwatch(call->job, &call->watch);
	exec_release(call->job);
	if (call->notified)
		event_free(call->notified);
	if (call->inotify_fd >= 0)
		close(call->inotify_fd);
	if (call->timer)
		event_free(call->timer);
	api_alive_free(call->alive);
	free(call->log_name);
	free(call);
}

/* ---- events ---- */

/* `room`: what the printed line may take; printing into a buffer of that
 * size spares cJSON's doubling reallocs over a 64 KiB piece. */
static void send_line_sized(struct output_call *call, cJSON *event, size_t room)
{
	char *line = xmalloc(room);
	if (!cJSON_PrintPreallocated(event, line, (int)room, false)) {
		free(line);
		line = cJSON_PrintUnformatted(event);
	}
	size_t length = strlen(line);
	line[length] = '\n'; /* replaces the NUL: one write with its newline */
	api_stream_write(call->req, line, length + 1);
	free(line);
	cJSON_Delete(event);
}

static void send_line(struct output_call *call, cJSON *event)
{
	send_line_sized(call, event, 4096);
}

static void send_alive(void *arg, cJSON *event)
{
	send_line(arg, event);
}

/* `length` bytes read at call->offset (in a buffer with room for one more,
 * which this overwrites): text when they are UTF-8, else
 * base64. The log is masked by the shim already; text goes through the
 * masker again as every answer does (a value set since), base64 cannot
 * (masking would break its bytes) and carries the log's bytes as they are. */
static void send_output(struct output_call *call, char *data, size_t length, bool text)
{
	cJSON *event = cJSON_CreateObject();
	cJSON_AddStringToObject(event, "type", "output");
	cJSON_AddNumberToObject(event, "offset", (double)call->offset);
	cJSON_AddNumberToObject(event, "bytes", (double)length);
	/* Each byte of text prints as at most 6 (\u00XX), of base64 as 4/3. */
	size_t room = 256 + length * 6;
	if (text) {
		data[length] = '\0'; /* the buffer has room; what was there is read again */
		char *masked = redact_active() ? redact_text(data) : data;
		cJSON_AddStringToObject(event, "data", masked);
		room = 256 + strlen(masked) * 6;
		if (masked != data)
			free(masked);
	} else {
		char *encoded = base64_encode(data, length);
		cJSON_AddStringToObject(event, "encoding", "base64");
		cJSON_AddStringToObject(event, "data", encoded);
		free(encoded);
	}
	send_line_sized(call, event, room);
	call->offset += length;
	api_alive_rearm(call->alive);
}

static void send_lost(struct output_call *call, uint64_t bytes)
{
	cJSON *event = cJSON_CreateObject();
	cJSON_AddStringToObject(event, "type", "lost");
	cJSON_AddNumberToObject(event, "bytes", (double)bytes);
	redact_json(event);
	send_line(call, event);
	call->offset += bytes;
}

/* The last event, when the command has ended, and the end of the answer
 * (which frees the call). */
static void finish(struct output_call *call)
{
	if (call->job->state == EXEC_ENDED) {
		cJSON *event = exec_result_json(call->job, false);
		cJSON_DeleteItemFromObject(event, "state");
		cJSON_AddStringToObject(event, "type", "exit");
		redact_json(event);
		send_line(call, event);
	}
	api_stream_end(call->req);
}

/* ---- reading ---- */

/* How much of `length` bytes read at the reader's position to send now:
 * cut where a character ends, except at the end of an ended command's log
 * (nothing will complete it); 0 means wait for more. `*text` tells the
 * encoding: a valid start goes as text up to the first byte that is not,
 * which then starts a base64 event of the rest of the piece. */
static size_t piece_length(const char *data, size_t length, bool at_end, bool ended, bool *text)
{
	size_t whole = at_end && ended ? length : utf8_prefix_length(data, length);
	if (whole == 0 && !at_end)
		whole = length; /* not a character's start: whatever it is goes as bytes */
	size_t valid = utf8_valid_prefix(data, whole);
	*text = valid > 0 || whole == 0;
	return valid > 0 ? valid : whole;
}

enum pump_result { PUMP_WAIT, PUMP_FULL, PUMP_RETRY, PUMP_DONE };

/* Sends what the log holds from the reader's position, until the socket's
 * buffer is full or the log's end is reached. */
static enum pump_result pump_some(struct output_call *call)
{
	/* Read before the job's state: a job seen ended has its output all in
	 * the log (the shim writes the log before the record), so a read begun
	 * after the look at the state misses nothing. */
	bool ended = call->job->state == EXEC_ENDED;
	struct exec_log log;
	if (!exec_log_open(&log, call->job))
		return ended || !call->follow ? PUMP_DONE : PUMP_WAIT;
	if (!log.numbered) {
		exec_log_close(&log);
		return PUMP_RETRY;
	}
	uint64_t start = exec_log_start(&log), end = exec_log_end(&log);
	if (call->offset < start)
		send_lost(call, start - call->offset);
	static char buffer[OUTPUT_PIECE + 1]; /* + the NUL send_output puts */
	enum pump_result result = PUMP_WAIT;
	while (call->offset < end) {
		if (api_stream_pending(call->req) >= OUTPUT_HIGH) {
			result = PUMP_FULL;
			break;
		}
		size_t want = end - call->offset < OUTPUT_PIECE ? (size_t)(end - call->offset)
								: OUTPUT_PIECE;
		ssize_t got = exec_log_read(&log, buffer, want, call->offset);
		if (got <= 0)
			break; /* cut short under us: the next look tells */
		bool at_end = call->offset + (uint64_t)got >= end, text;
		size_t length = piece_length(buffer, (size_t)got, at_end, ended, &text);
		if (length == 0)
			break; /* a character's start: the rest is still to come */
		send_output(call, buffer, length, text);
	}
	exec_log_close(&log);
	if (result == PUMP_FULL)
		return PUMP_FULL;
	return ended || !call->follow ? PUMP_DONE : PUMP_WAIT;
}

static void pump(struct output_call *call)
{
	switch (pump_some(call)) {
	case PUMP_DONE: finish(call); return;
	case PUMP_FULL: return; /* on_drained goes on */
	case PUMP_RETRY: {
		struct timeval soon = {0, OUTPUT_RETRY_MS * 1000};
		event_add(call->timer, &soon);
		return;
	}
	case PUMP_WAIT:
		if (call->inotify_fd < 0) {
			struct timeval poll = {0, OUTPUT_POLL_MS * 1000};
			event_add(call->timer, &poll);
		}
		return; /* inotify, or the job's end, calls again */
	}
}

static void on_drained(struct api_request *req)
{
	struct output_call *call = api_data(req);
	if (call && api_stream_pending(req) < OUTPUT_HIGH)
		pump(call);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	pump(arg);
}

/* Whether one of the events names LOG or LOG.1 (a rotation's rename). */
static bool names_log(struct output_call *call, const char *events, ssize_t length)
{
	size_t name_length = strlen(call->log_name);
	for (ssize_t at = 0; at < length;) {
		const struct inotify_event *event = (const void *)(events + at);
		if (event->len && strncmp(event->name, call->log_name, name_length) == 0 &&
		    (!event->name[name_length] || strcmp(event->name + name_length, ".1") == 0))
			return true;
		at += (ssize_t)(sizeof *event + event->len);
	}
	return false;
}

static void on_notified(evutil_socket_t fd, short what, void *arg)
{
	struct output_call *call = arg;
	char events[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool ours = false;
	ssize_t n;
	while ((n = read(fd, events, sizeof events)) > 0)
		ours = ours || names_log(call, events, n);
	/* While the socket is full, its drain reads on. */
	if (ours && api_stream_pending(call->req) < OUTPUT_HIGH)
		pump(call);
}

static void on_job_end(void *arg, struct exec_job *job)
{
	struct output_call *call = arg;
	call->watching = false;
	if (api_stream_pending(call->req) < OUTPUT_HIGH)
		pump(call);
}

static void on_client_gone(struct api_request *req)
{
	api_stream_end(req); /* frees the call; the command carries on */
}

/* Watches the log's dir for writes, creations and renames into it; without
 * inotify (no instances left, say) the pump polls instead. */
static void watch_log(struct output_call *call)
{
	const char *path = call->job->meta.log_path;
	const char *slash = strrchr(path, '/');
	call->log_name = xstrdup(slash ? slash + 1 : path);
	call->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (call->inotify_fd < 0 || !slash)
		return;
	char *dir = slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path));
	int added = inotify_add_watch(call->inotify_fd, dir,
				      IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE);
	free(dir);
	if (added < 0) {
		close(call->inotify_fd);
		call->inotify_fd = -1;
		return;
	}
	call->notified = event_new(api_base(call->req), call->inotify_fd, EV_READ | EV_PERSIST,
				   on_notified, call);
	event_add(call->notified, NULL);
}

/* ---- the route ---- */

static bool parse_offset(struct api_request *req, uint64_t *offset)
{
	const char *text = api_query(req, "offset");
	*offset = 0;
	if (!text)
		return true;
	char *end;
	errno = 0;
	long long parsed = strtoll(text, &end, 10);
	if (errno || *end || end == text || parsed < 0) {
		api_reply_bad_request(req,
				      "offset must be a whole number of bytes from 0 (the "
				      "command's first byte of output), not %.32s",
				      text);
		return false;
	}
	*offset = (uint64_t)parsed;
	return true;
}

static bool parse_follow(struct api_request *req, bool *follow)
{
	const char *text = api_query(req, "follow");
	*follow = text && (strcmp(text, "1") == 0 || strcmp(text, "true") == 0);
	if (!text || *follow || strcmp(text, "0") == 0 || strcmp(text, "false") == 0)
		return true;
	api_reply_bad_request(req, "follow must be 1 or 0, not %.32s", text);
	return false;
}

static void handle_output(struct api_request *req)
{
	struct exec_job *job = api_exec_find(req);
	if (!job)
		return;
	uint64_t offset;
	bool follow;
	if (!parse_offset(req, &offset) || !parse_follow(req, &follow))
		return;
	struct output_call *call = xcalloc(1, sizeof *call);
	call->req = req;
	call->job = job;
	call->offset = offset;
	call->follow = follow;
	call->inotify_fd = -1;
	exec_hold(job);
	api_set_data(req, call, call_release);
	api_stream_start(req, 200, "application/x-ndjson", on_drained);
	api_on_client_gone(req, on_client_gone);
	call->timer = evtimer_new(api_base(req), on_timer, call);
	call->alive = api_alive_new(api_base(req), send_alive, call);
	if (follow && job->state == EXEC_RUNNING) {
		watch_log(call);
		call->watch = (struct exec_watch){.ended = on_job_end, .arg = call};
		call->watching = true;
		exec_watch(job, &call->watch);
	}
	pump(call);
}

const struct api_route api_exec_output_routes[] = {
	/* Read-only: served while a person has the screen, as the log is. */
	{"GET", "/v1/exec/{}/output", 0, 0, handle_output},
	{0},
};
