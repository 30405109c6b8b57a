/* api-sync.c: POST /v1/sync/diff and POST /v1/sync/upload (API.md, "Sync
 * and files").
 *
 * Both run in the boxd-archive worker (archive-client.h, upload.h), so
 * neither libcrypto nor libarchive is ever loaded into boxd: the diff
 * hashes on the worker's threads with the hash cache, the upload extracts
 * in its sandbox. The body streams into the worker as it arrives, of any
 * size (API_STREAM_BODY). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api-archive.h"
#include "archive-client.h"
#include "redact.h"
#include "router.h"
#include "upload.h"

#define DEFAULT_LIMIT "400"

static void diff_answered(void *arg, const struct archive_diff_answer *answer)
{
	struct api_request *req = arg;
	api_archive_ended(req);
	if (!answer->ok) {
		api_reply_failure(req, answer->failure, "%s", answer->message);
		return;
	}
	/* Hex paths: a path that holds a secret value is masked too. */
	char *shown = redact_text(answer->json);
	api_reply_bytes(req, 200, "application/json", shown, strlen(shown));
	free(shown);
}

static void handle_diff(struct api_request *req)
{
	char *dest = api_archive_dest(req);
	if (!dest)
		return;
	const char *limit = api_query(req, "limit");
	if (!limit)
		limit = DEFAULT_LIMIT;
	char *end;
	errno = 0;
	unsigned long entries = strtoul(limit, &end, 10);
	int manifest_fd = -1;
	if (errno || end == limit || *end || limit[0] == '-' || limit[0] == '+')
		api_reply_bad_request(req, "limit must be a whole number, not \"%s\"", limit);
	else if ((manifest_fd = api_archive_body(req)) >= 0)
		api_archive_watch(
			req, archive_client_diff(dest, entries, manifest_fd, diff_answered, req));
	free(dest);
}

static void handle_upload(struct api_request *req)
{
	char *dest = api_archive_dest(req);
	if (!dest)
		return;
	int archive_fd = api_archive_body(req);
	if (archive_fd >= 0)
		api_archive_watch(
			req, upload_extract(dest, archive_fd, api_archive_upload_answered, req));
	free(dest);
}

const struct api_route api_sync_routes[] = {
	{"POST", "/v1/sync/diff", API_STREAM_BODY, 0, handle_diff},
	{"POST", "/v1/sync/upload",
	 API_REFUSED_WHILE_LOCKED | API_IDEMPOTENT | API_STREAM_BODY | API_UPLOAD, 0,
	 handle_upload},
	{0},
};
