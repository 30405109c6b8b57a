/* api-exec-input.c: POST /v1/exec/{id}/stdin, bytes into a running
 * command's open stdin (started with "stdin": {"stream": true}) or its
 * terminal ("pty"), `?close=1` closing it after them.
 *
 * The body streams straight into the copy of the command's input its shim
 * hands over (exec_input): the socket is read only as fast as the command
 * reads, so a gigabyte piped in costs boxd no memory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api-exec.h"
#include "api.h"
#include "exec.h"
#include "router.h"
#include "xalloc.h"

struct input_call {
	struct api_request *req;
	struct exec_job *job;
	struct exec_input *pending;
	bool close;
};

static void call_release(void *data)
{
	struct input_call *call = data;
	exec_input_cancel(call->pending);
	exec_release(call->job);
	free(call);
}

static void answer(struct input_call *call)
{
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "id", call->job->id);
	cJSON_AddBoolToObject(body, "closed", call->close);
	api_reply_json(call->req, 200, body);
}

static void on_written(struct api_request *req, bool complete, int error)
{
	struct input_call *call = api_data(req);
	if (complete) {
		if (call->close && !exec_close_stdin(call->job)) {
			api_reply_failure(req, FAILURE_CONFLICT, "%s has ended: its stdin is gone",
					  call->job->id);
			return;
		}
		answer(call);
	} else if (error == EPIPE) {
		api_reply_failure(req, FAILURE_CONFLICT,
				  "%s no longer reads its stdin (nothing holds it open for "
				  "reading); what was written before is in",
				  call->job->id);
	} else if (error == EPROTO) {
		api_reply_bad_request(req, "the body's chunked framing is malformed");
	} else {
		api_reply_failure(req, FAILURE_INTERNAL, "writing into %s's stdin failed: %s",
				  call->job->id, strerror(error));
	}
}

static void on_input(void *arg, int fd, bool terminal, enum failure failure, const char *error)
{
	struct input_call *call = arg;
	call->pending = NULL;
	if (fd < 0) {
		api_reply_failure(call->req, failure, "%s: %s", call->job->id, error);
		return;
	}
	api_body_to_fd(call->req, fd, on_written);
}

static void handle_stdin(struct api_request *req)
{
	const char *close_text = api_query(req, "close");
	struct exec_job *job = api_exec_find(req);
	if (!job)
		return;
	if (close_text && strcmp(close_text, "0") && strcmp(close_text, "1")) {
		api_reply_bad_request(req, "close must be 0 or 1");
		return;
	}
	struct input_call *call = xcalloc(1, sizeof *call);
	call->req = req;
	call->job = job;
	call->close = close_text && !strcmp(close_text, "1");
	exec_hold(job);
	api_set_data(req, call, call_release);
	/* done() may run at once (an ended command) and answer the request. */
	struct exec_input *pending = exec_input(job, on_input, call);
	if (pending)
		call->pending = pending;
}

const struct api_route api_exec_input_routes[] = {
	{"POST", "/v1/exec/{}/stdin", API_REFUSED_WHILE_LOCKED | API_STREAM_BODY, 0, handle_stdin},
	{0},
};
