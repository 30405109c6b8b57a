/* api-procs.c: the /v1/procs endpoints (background commands). */
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api-exec.h"
#include "router.h"
#include "config.h"
#include "exec-log.h"
#include "exec.h"
#include "redact.h"
#include "steps.h"
#include "utf8.h"
#include "xalloc.h"

#define PROCS_MAX_WAIT_SEC 3600
#define PROCS_LOG_DEFAULT_LIMIT (1u << 20)
#define PROCS_LOG_MAX_LIMIT (16u << 20)
#define PROCS_TAIL_MAX_LINES 100000

static struct exec_job *find_proc(struct api_request *req)
{
	struct exec_job *job = exec_find(api_param(req, 0));
	if (!job || !job->meta.background) {
		api_reply_not_found(req, "no background command %s", api_param(req, 0));
		return NULL;
	}
	return job;
}

static int by_start(const void *a, const void *b)
{
	const struct exec_job *const *x = a, *const *y = b;
	return ((*x)->meta.started_at > (*y)->meta.started_at) -
	       ((*x)->meta.started_at < (*y)->meta.started_at);
}

static void handle_list(struct api_request *req)
{
	size_t count = 0;
	for (struct exec_job *job = exec_first(); job; job = job->next)
		count += job->meta.background;
	struct exec_job **sorted = xcalloc(count + 1, sizeof *sorted);
	size_t n = 0;
	for (struct exec_job *job = exec_first(); job; job = job->next)
		if (job->meta.background)
			sorted[n++] = job;
	qsort(sorted, n, sizeof *sorted, by_start);
	cJSON *answer = cJSON_CreateObject();
	cJSON *list = cJSON_AddArrayToObject(answer, "procs");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(list, exec_proc_json(sorted[i]));
	free(sorted);
	api_reply_json(req, 200, answer);
}

static void handle_show(struct api_request *req)
{
	struct exec_job *job = find_proc(req);
	if (job)
		api_reply_json(req, 200, exec_proc_json(job));
}

/* ---- wait and stop: answer when the job ends (or the wait runs out) ---- */

struct proc_wait {
	struct api_request *req;
	struct exec_job *job;
	struct exec_watch watch;
	bool watching;
	struct event *timer;
};

static void wait_release(void *data)
{
	struct proc_wait *wait = data;
	if (wait->watching)
		exec_unwatch(wait->job, &wait->watch);
	exec_release(wait->job);
	if (wait->timer)
		event_free(wait->timer);
	free(wait);
}

static void on_wait_end(void *arg, struct exec_job *job)
{
	struct proc_wait *wait = arg;
	wait->watching = false;
	api_reply_json(wait->req, 200, exec_proc_json(job));
}

static void on_wait_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct proc_wait *wait = arg;
	cJSON *answer = exec_proc_json(wait->job);
	cJSON_AddBoolToObject(answer, "waitTimedOut", true);
	api_reply_json(wait->req, 200, answer);
}

static void wait_for_end(struct api_request *req, struct exec_job *job, double seconds)
{
	struct proc_wait *wait = xcalloc(1, sizeof *wait);
	wait->req = req;
	wait->job = job;
	exec_hold(job);
	api_set_data(req, wait, wait_release);
	if (seconds > 0) {
		wait->timer = evtimer_new(api_base(req), on_wait_timeout, wait);
		struct timeval limit = {(time_t)seconds,
					(suseconds_t)((seconds - (time_t)seconds) * 1e6)};
		event_add(wait->timer, &limit);
	}
	wait->watch = (struct exec_watch){.ended = on_wait_end, .arg = wait};
	wait->watching = true;
	exec_watch(job, &wait->watch);
}

static bool number_field(struct api_request *req, cJSON *body, const char *name, double low,
			 double high, double *value)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(body, name);
	if (!item)
		return true;
	if (!cJSON_IsNumber(item) || item->valuedouble < low || item->valuedouble > high) {
		api_reply_bad_request(req, "%s must be a number from %.0f to %.0f", name, low,
				      high);
		return false;
	}
	*value = item->valuedouble;
	return true;
}

static void handle_wait(struct api_request *req)
{
	struct exec_job *job = find_proc(req);
	cJSON *body = job ? api_body_json(req) : NULL;
	double seconds = 30;
	if (body && number_field(req, body, "timeoutSec", 0, PROCS_MAX_WAIT_SEC, &seconds))
		wait_for_end(req, job, seconds);
}

static void handle_stop(struct api_request *req)
{
	struct exec_job *job = find_proc(req);
	cJSON *body = job ? api_body_json(req) : NULL;
	if (!body)
		return;
	double grace = 5;
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(body, "signal");
	int signal = cJSON_IsString(name)   ? signal_number(name->valuestring)
		     : cJSON_IsNumber(name) ? (int)name->valuedouble
		     : name                 ? -1
					    : 15;
	if (signal <= 0 || signal > 64) {
		api_reply_bad_request(
			req, "signal must be a signal name such as \"SIGTERM\" or a number");
		return;
	}
	if (!number_field(req, body, "graceSec", 0, 3600, &grace))
		return;
	if (job->state == EXEC_RUNNING) {
		steps_add("stop", "stop %s with %s", job->id, signal_name(signal));
		exec_stop(job, signal, (int64_t)(grace * 1000));
	}
	wait_for_end(req, job, 0);
}

static void handle_delete(struct api_request *req)
{
	struct exec_job *job = find_proc(req);
	if (!job)
		return;
	if (job->state == EXEC_RUNNING) {
		api_reply_failure(req, FAILURE_CONFLICT, "%s is still running: stop it first",
				  job->id);
		return;
	}
	if (exec_held(job)) {
		api_reply_failure(req, FAILURE_CONFLICT,
				  "%s is being read by another call; try again", job->id);
		return;
	}
	cJSON *answer = cJSON_CreateObject();
	cJSON_AddStringToObject(answer, "bgId", job->id);
	cJSON_AddBoolToObject(answer, "forgotten", true);
	exec_forget(job);
	api_reply_json(req, 200, answer);
}

/* ---- the log ---- */

/* This route's offsets count from the oldest byte kept (X-Log-Size is
 * what is kept), not from the command's first byte as the output route's
 * do: they stay as they were before there was a numbering. */
static ssize_t view_pread(struct exec_log *log, char *buffer, size_t length, off_t at)
{
	return exec_log_read(log, buffer, length, exec_log_start(log) + (uint64_t)at);
}

/* Where the last `lines` lines start (at most `limit` bytes back). */
static off_t tail_start(struct exec_log *view, off_t size, long lines, size_t limit)
{
	char block[65536];
	off_t at = size, floor = size > (off_t)limit ? size - (off_t)limit : 0;
	long seen = 0;
	bool skip_last = true; /* a final newline does not start an empty line */
	while (at > floor) {
		size_t n = (size_t)(at - floor < (off_t)sizeof block ? at - floor
								     : (off_t)sizeof block);
		if (view_pread(view, block, n, at - (off_t)n) != (ssize_t)n)
			return at;
		for (size_t i = n; i-- > 0;) {
			if (block[i] != '\n')
				continue;
			if (skip_last && at - (off_t)n + (off_t)i == size - 1) {
				skip_last = false;
				continue;
			}
			if (++seen == lines)
				return at - (off_t)n + (off_t)i + 1;
		}
		at -= (off_t)n;
	}
	return floor;
}

static bool query_number(struct api_request *req, const char *name, long long high,
			 long long *value)
{
	const char *text = api_query(req, name);
	if (!text)
		return true;
	char *end;
	errno = 0;
	long long parsed = strtoll(text, &end, 10);
	if (errno || *end || end == text || parsed < 0 || parsed > high) {
		api_reply_bad_request(req, "%s must be a whole number from 0 to %lld", name, high);
		return false;
	}
	*value = parsed;
	return true;
}

static void handle_log(struct api_request *req)
{
	struct exec_job *job = api_exec_find(req);
	if (!job)
		return;
	long long tail = -1, offset = 0, limit = PROCS_LOG_DEFAULT_LIMIT;
	if (!query_number(req, "tail", PROCS_TAIL_MAX_LINES, &tail) ||
	    !query_number(req, "offset", INT64_MAX / 2, &offset) ||
	    !query_number(req, "limit", PROCS_LOG_MAX_LIMIT, &limit))
		return;
	struct exec_log view;
	if (!exec_log_open(&view, job)) {
		int error = errno;
		api_reply_failure(req, FAILURE_NOT_FOUND, "the log %s cannot be read: %s",
				  job->meta.log_path, strerror(error));
		return;
	}
	off_t total = (off_t)(exec_log_end(&view) - exec_log_start(&view));
	off_t start = tail >= 0 ? tail_start(&view, total, (long)tail, PROCS_LOG_MAX_LIMIT)
				: (off_t)offset;
	if (tail == 0)
		start = total;
	size_t want = start >= total ? 0 : (size_t)(total - start);
	if (want > (size_t)limit)
		want = (size_t)limit;
	char *data = xmalloc(want + 1);
	ssize_t got = want ? view_pread(&view, data, want, start) : 0;
	exec_log_close(&view);
	size_t length = got > 0 ? (size_t)got : 0;
	/* Cut where a character ends, so the next offset starts on one. */
	if (length == want && start + (off_t)length < total)
		length = utf8_prefix_length(data, length);
	char *text = utf8_sanitize(data, length, NULL);
	char *masked = redact_text(text);
	char size_text[32], next_text[32];
	snprintf(size_text, sizeof size_text, "%lld", (long long)total);
	snprintf(next_text, sizeof next_text, "%lld", (long long)(start + (off_t)length));
	api_add_header(req, "X-Log-Size", size_text);
	api_add_header(req, "X-Log-Next-Offset", next_text);
	api_add_header(req, "X-Proc-State", job->state == EXEC_ENDED ? "exited" : "running");
	api_reply_bytes(req, 200, "text/plain; charset=utf-8", masked, strlen(masked));
	free(masked);
	free(text);
	free(data);
}

const struct api_route api_procs_routes[] = {
	{"GET", "/v1/procs", 0, 0, handle_list},
	{"GET", "/v1/procs/{}", 0, 0, handle_show},
	{"POST", "/v1/procs/{}/wait", 0, 0, handle_wait},
	{"POST", "/v1/procs/{}/stop", API_IDEMPOTENT, 0, handle_stop},
	{"GET", "/v1/procs/{}/log", 0, 0, handle_log},
	{"DELETE", "/v1/procs/{}", API_IDEMPOTENT, 0, handle_delete},
	{0},
};
