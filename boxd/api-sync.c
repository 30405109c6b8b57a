/* api-sync.c: POST /v1/sync/diff and POST /v1/sync/upload (API.md, "Sync
 * and files"). The diff runs on worker threads (sync.c); the upload runs in
 * the sandboxed archive worker (upload.c). */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "boxd.h"
#include "hash-cache.h"
#include "log.h"
#include "offload.h"
#include "sync.h"
#include "upload.h"
#include "xalloc.h"

#define DEFAULT_LIMIT 400

struct diff_request {
	struct api_request *req;
	char *dest;
	char *manifest;
	size_t length;
	unsigned long limit;
	struct sync_diff_result result;
	bool dest_outside;
};

static int diff_threads(void)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	return cores < 1 ? 1 : cores > 4 ? 4 : (int)cores;
}

/* On a worker thread: everything that touches the disk. */
static void diff_work(void *arg)
{
	struct diff_request *diff = arg;
	const struct boxd_config *config = boxd_config();
	int work_fd = open(config->work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	const char *why = NULL;
	int dest_fd = work_fd < 0 ? -1 : sync_open_dest(work_fd, config->work_dir, diff->dest, &why);
	if (dest_fd < 0 && (errno == EXDEV || errno == ELOOP))
		diff->dest_outside = true;
	char *cache_path = xasprintf("%s/hash-cache", config->run_dir);
	struct hash_cache *cache = hash_cache_open(cache_path);
	free(cache_path);
	if (!diff->dest_outside)
		sync_diff_run(dest_fd, diff->manifest, diff->length, diff->limit, cache,
			      diff_threads(), &diff->result);
	hash_cache_close(cache);
	if (dest_fd >= 0)
		close(dest_fd);
	if (work_fd >= 0)
		close(work_fd);
	free(diff->manifest);
	diff->manifest = NULL;
	/* A big manifest leaves freed heap behind: give it back. */
	malloc_trim(0);
}

static void diff_done(void *arg)
{
	struct diff_request *diff = arg;
	struct sync_diff_result *result = &diff->result;
	if (diff->dest_outside)
		api_reply_bad_request(diff->req, "dest leads outside the work dir through a symbolic link");
	else if (result->status == SYNC_BAD_REQUEST)
		api_reply_bad_request(diff->req, "%s", result->message);
	else if (result->status == SYNC_FAILED)
		api_reply_error(diff->req, 500, "internal", "%s", result->message);
	else
		api_reply_json(diff->req, 200, result->answer);
	log_msg(LOG_LEVEL_DEBUG, "sync diff %s: %lu entries, %lu hashed, %lu from the cache",
		diff->dest, result->entries, result->hashed, result->cache_hits);
	free(diff->dest);
	free(diff);
}

static void handle_diff(struct api_request *req)
{
	const char *dest = api_query(req, "dest");
	if (!dest) {
		api_reply_bad_request(req, "the dest query parameter is missing (a folder under the work dir)");
		return;
	}
	const char *why = NULL;
	char *relative = sync_dest_relative(boxd_config()->work_dir, dest, &why);
	if (!relative) {
		api_reply_bad_request(req, "dest %s", why);
		return;
	}
	unsigned long limit = DEFAULT_LIMIT;
	const char *limit_text = api_query(req, "limit");
	if (limit_text) {
		char *end;
		errno = 0;
		limit = strtoul(limit_text, &end, 10);
		if (errno || end == limit_text || *end || limit_text[0] == '-') {
			free(relative);
			api_reply_bad_request(req, "limit must be a whole number, not \"%s\"", limit_text);
			return;
		}
	}
	struct diff_request *diff = xcalloc(1, sizeof *diff);
	diff->req = req;
	diff->dest = relative;
	diff->limit = limit;
	/* A copy: the thread must not depend on the connection staying. */
	const void *body = api_body(req, &diff->length);
	diff->manifest = xmalloc(diff->length + 1);
	memcpy(diff->manifest, body, diff->length);
	offload_run(diff_work, diff_done, diff);
}

static void handle_upload(struct api_request *req)
{
	char *dest = upload_dest(req);
	if (!dest)
		return;
	upload_extract(req, dest, -1, NULL, NULL);
	free(dest);
}

const struct api_route api_sync_routes[] = {
	{"POST", "/v1/sync/diff", 0, API_MAX_BODY, handle_diff},
	{"POST", "/v1/sync/upload", API_REFUSED_WHILE_LOCKED | API_IDEMPOTENT, API_MAX_BODY, handle_upload},
	{0},
};
