/* api-archive.c: the request's side of a worker call: its body as a pipe,
 * its client's leaving, an upload's answer. */
#include "api-archive.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "archive-client.h"
#include "config.h"
#include "router.h"
#include "work-path.h"

char *api_archive_dest(struct api_request *req)
{
	const char *dest = api_query(req, "dest");
	if (!dest) {
		api_reply_bad_request(
			req, "the dest query parameter is missing (a folder under the work dir)");
		return NULL;
	}
	const char *why = NULL;
	char *relative = work_path_relative(api_config()->work_dir, dest, &why);
	if (!relative)
		api_reply_bad_request(req, "dest %s", why);
	return relative;
}

static void on_client_gone(struct api_request *req)
{
	struct archive_call *call = api_data(req);
	if (call)
		archive_call_cancel(call);
}

/* The worker's input is the request's body, streamed in as it arrives: a
 * client that leaves mid-body is one that is gone. */
static void body_streamed(struct api_request *req, bool complete, int error)
{
	if (!complete && error == ECONNRESET)
		on_client_gone(req);
}

int api_archive_body(struct api_request *req)
{
	int pair[2];
	if (pipe2(pair, O_CLOEXEC) < 0) {
		api_reply_failure(req, FAILURE_INTERNAL, "cannot make a pipe for the body: %s",
				  strerror(errno));
		return -1;
	}
	fcntl(pair[1], F_SETFL, O_NONBLOCK);
	fcntl(pair[1], F_SETPIPE_SZ, 1 << 20); /* fewer wakeups; kernel memory, not boxd's */
	api_body_to_fd(req, pair[1], body_streamed);
	return pair[0];
}

void api_archive_watch(struct api_request *req, struct archive_call *call)
{
	if (!call)
		return; /* answered already: `req` may be freed */
	api_set_data(req, call, NULL);
	api_on_client_gone(req, on_client_gone);
}

void api_archive_ended(struct api_request *req)
{
	api_set_data(req, NULL, NULL);
}

void api_archive_upload_answered(void *arg, const struct upload_result *result)
{
	struct api_request *req = arg;
	api_archive_ended(req);
	if (!result->ok) {
		api_reply_failure(req, result->failure, "%s", result->message);
		return;
	}
	cJSON *answer = cJSON_CreateObject();
	cJSON_AddBoolToObject(answer, "ok", true);
	cJSON_AddNumberToObject(answer, "files", (double)result->files);
	cJSON_AddNumberToObject(answer, "bytes", (double)result->bytes);
	cJSON_AddStringToObject(answer, "dest", result->dest);
	api_reply_json(req, 200, answer);
}
