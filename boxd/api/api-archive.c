#include "api-archive.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "api.h"
#include "router.h"
#include "upload.h"
#include "work-path.h"
#include "xalloc.h"

/* One request's worker call, while it runs. */
struct worker_call {
	struct api_request *req;
	struct archive_call *call; /* NULL until archive_call returns */
	api_archive_done_fn done;
	void (*after)(void *arg, bool ok);
	void *arg;
};

static void on_client_gone(struct api_request *req)
{
	struct worker_call *pending = api_data(req);
	if (pending && pending->call)
		archive_call_cancel(pending->call);
}

/* The worker's input is the request's body, streamed in as it arrives: a
 * client that leaves mid-body is one that is gone. */
static void body_streamed(struct api_request *req, bool complete, int error)
{
	if (!complete && error == ECONNRESET)
		on_client_gone(req);
}

/* A pipe the connection feeds the request's body into, at the pace the
 * worker reads it; its reading end (the worker's stdin), or -1 after
 * answering. */
static int body_pipe(struct api_request *req)
{
	int pair[2];
	if (pipe2(pair, O_CLOEXEC) < 0) {
		api_reply_failure(req, FAILURE_INTERNAL, "cannot make a pipe for the body: %s", strerror(errno));
		return -1;
	}
	fcntl(pair[1], F_SETFL, O_NONBLOCK);
	fcntl(pair[1], F_SETPIPE_SZ, 1 << 20); /* fewer wakeups; kernel memory, not boxd's */
	api_body_to_fd(req, pair[1], body_streamed);
	return pair[0];
}

/* The request is answered only from done(), after the worker ended. */
static void watch_client(struct worker_call *pending, struct archive_call *call)
{
	if (!call)
		return; /* done() has run and freed `pending` */
	pending->call = call;
	api_set_data(pending->req, pending, NULL);
	api_on_client_gone(pending->req, on_client_gone);
}

static void call_done(const struct archive_call_result *result, void *arg)
{
	struct worker_call *pending = arg;
	if (pending->call)
		api_set_data(pending->req, NULL, NULL);
	pending->done(pending->req, result, pending->arg);
	free(pending);
}

void api_archive_call(struct api_request *req, const char *const args[], int input_fd,
		      size_t output_limit, api_archive_done_fn done, void *arg)
{
	if (input_fd < 0 && (input_fd = body_pipe(req)) < 0)
		return;
	struct worker_call *pending = xcalloc(1, sizeof *pending);
	*pending = (struct worker_call){.req = req, .done = done, .arg = arg};
	watch_client(pending, archive_call(args, NULL, 0, input_fd, output_limit, call_done, pending));
}

char *api_upload_dest(struct api_request *req)
{
	const char *dest = api_query(req, "dest");
	if (!dest) {
		api_reply_bad_request(req, "the dest query parameter is missing (a folder under the work dir)");
		return NULL;
	}
	const char *why = NULL;
	char *relative = work_path_relative(api_config()->work_dir, dest, &why);
	if (!relative)
		api_reply_bad_request(req, "dest %s", why);
	return relative;
}

static void upload_done(struct upload_result *result, void *arg)
{
	struct worker_call *pending = arg;
	struct api_request *req = pending->req;
	if (pending->call)
		api_set_data(req, NULL, NULL);
	bool ok = result->outcome == UPLOAD_DONE;
	if (ok)
		api_reply_json(req, 200, result->summary);
	else if (result->outcome == UPLOAD_REFUSED)
		api_reply_failure(req, FAILURE_BAD_REQUEST, "%s", result->message);
	else if (result->outcome == UPLOAD_DISK_FULL)
		api_reply_failure(req, FAILURE_DISK_FULL, "%s", result->message);
	else
		api_reply_failure(req, FAILURE_INTERNAL, "%s", result->message);
	if (pending->after)
		pending->after(pending->arg, ok);
	free(pending);
}

void api_upload_extract(struct api_request *req, const char *dest, int input_fd,
			void (*after)(void *arg, bool ok), void *arg)
{
	if (input_fd < 0 && (input_fd = body_pipe(req)) < 0) {
		if (after)
			after(arg, false);
		return;
	}
	struct worker_call *pending = xcalloc(1, sizeof *pending);
	*pending = (struct worker_call){.req = req, .after = after, .arg = arg};
	watch_client(pending, upload_extract(dest, NULL, 0, input_fd, upload_done, pending));
}
