#include "api-archive.h"

#include <stdlib.h>

#include "config.h"
#include "http/api.h"
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

/* The request's body is the worker's input: it must outlive the call, so
 * the request is answered only from done(). */
static void watch_client(struct worker_call *pending, struct archive_call *call)
{
	if (!call)
		return; /* done() has run and freed `pending` */
	pending->call = call;
	api_set_data(pending->req, pending, NULL);
	api_on_client_gone(pending->req, on_client_gone);
}

static const void *input_of(struct api_request *req, int input_fd, size_t *length)
{
	*length = 0;
	return input_fd >= 0 ? NULL : api_body(req, length);
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
	struct worker_call *pending = xcalloc(1, sizeof *pending);
	*pending = (struct worker_call){.req = req, .done = done, .arg = arg};
	size_t length;
	const void *input = input_of(req, input_fd, &length);
	watch_client(pending, archive_call(args, input, length, input_fd, output_limit, call_done,
					   pending));
}

char *api_upload_dest(struct api_request *req)
{
	const char *dest = api_query(req, "dest");
	if (!dest) {
		api_reply_bad_request(req, "the dest query parameter is missing (a folder under the work dir)");
		return NULL;
	}
	const char *why = NULL;
	char *relative = work_path_relative(api_config(req)->work_dir, dest, &why);
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
		api_reply_error(req, 400, "bad_request", "%s", result->message);
	else
		api_reply_error(req, 500, "internal", "%s", result->message);
	if (pending->after)
		pending->after(pending->arg, ok);
	free(pending);
}

void api_upload_extract(struct api_request *req, const char *dest, int input_fd,
			void (*after)(void *arg, bool ok), void *arg)
{
	struct worker_call *pending = xcalloc(1, sizeof *pending);
	*pending = (struct worker_call){.req = req, .after = after, .arg = arg};
	size_t length;
	const void *input = input_of(req, input_fd, &length);
	watch_client(pending, upload_extract(dest, input, length, input_fd, upload_done, pending));
}
