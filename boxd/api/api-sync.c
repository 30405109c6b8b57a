/* api-sync.c: POST /v1/sync/diff and POST /v1/sync/upload (API.md, "Sync
 * and files").
 *
 * Both run in the boxd-archive worker, so neither libcrypto nor libarchive
 * is ever loaded into boxd (they would double its idle resident size): the
 * diff hashes on the worker's threads with the hash cache in RUN_DIR, the
 * upload extracts in its sandbox. boxd only pipes the body in (streamed as
 * it arrives, of any size: API_STREAM_BODY) and the JSON answer out. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "router.h"
#include "api-archive.h"
#include "config.h"
#include "log.h"
#include "redact.h"
#include "upload.h"
#include "work-path.h"
#include "xalloc.h"

#define DEFAULT_LIMIT "400"
/* The largest answer: `limit` hex paths of up to 4096 bytes, and then some. */
#define ANSWER_LIMIT (64u << 20)

static void diff_answered(struct api_request *req, const struct archive_call_result *result,
			  void *arg)
{
	/* The worker's answer goes out as it is: parsing and printing a long
	 * list of paths again would only cost boxd memory. */
	bool answered = result->status == 0 && !result->output_cut &&
			(strncmp(result->output, "{\"changed\":", 11) == 0 ||
			 strncmp(result->output, "{\"all\":", 7) == 0);
	if (answered) {
		/* Hex paths: a path that holds a secret value is masked too. */
		char *shown = redact_text(result->output);
		api_reply_bytes(req, 200, "application/json", shown, strlen(shown));
		free(shown);
		return;
	}
	cJSON *json = cJSON_ParseWithLength(result->output, result->output_length);
	cJSON *error = cJSON_GetObjectItem(json, "error");
	if (json && !error && !result->output_cut) {
		api_reply_json(req, 200, json); /* an answer, though the exit was not clean */
		return;
	}
	if (error) {
		const char *code = cJSON_GetStringValue(cJSON_GetObjectItem(error, "code"));
		const char *message = cJSON_GetStringValue(cJSON_GetObjectItem(error, "message"));
		bool refused = failure_from_code(code) == FAILURE_BAD_REQUEST;
		api_reply_failure(req, refused ? FAILURE_BAD_REQUEST : FAILURE_INTERNAL, "%s",
				  message ? message : "the diff failed");
	} else {
		api_reply_failure(req, FAILURE_INTERNAL, "the diff worker stopped without an answer (status %d%s%s)",
				result->status, result->errors[0] ? ": " : "", result->errors);
	}
	cJSON_Delete(json);
}

static void handle_diff(struct api_request *req)
{
	char *relative = api_upload_dest(req);
	if (!relative)
		return;
	const char *limit = api_query(req, "limit");
	if (!limit)
		limit = DEFAULT_LIMIT;
	char *end;
	errno = 0;
	(void)strtoul(limit, &end, 10);
	if (errno || end == limit || *end || limit[0] == '-' || limit[0] == '+') {
		free(relative);
		api_reply_bad_request(req, "limit must be a whole number, not \"%s\"", limit);
		return;
	}
	char *cache = xasprintf("%s/hash-cache", api_config()->run_dir);
	const char *args[] = {"diff", api_config()->work_dir, relative[0] ? relative : ".", limit,
			      cache, "--user", api_config()->user ? api_config()->user : "root",
			      NULL};
	api_archive_call(req, args, -1, ANSWER_LIMIT, diff_answered, NULL);
	free(cache);
	free(relative);
}

static void handle_upload(struct api_request *req)
{
	char *dest = api_upload_dest(req);
	if (!dest)
		return;
	api_upload_extract(req, dest, -1, NULL, NULL);
	free(dest);
}

const struct api_route api_sync_routes[] = {
	{"POST", "/v1/sync/diff", API_STREAM_BODY, 0, handle_diff},
	{"POST", "/v1/sync/upload", API_REFUSED_WHILE_LOCKED | API_IDEMPOTENT | API_STREAM_BODY, 0,
	 handle_upload},
	{0},
};
