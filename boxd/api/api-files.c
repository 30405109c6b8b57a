/* api-files.c: GET /v1/files?path=... (API.md, "Sync and files").
 *
 * A regular file streams as it is, with an ETag (a 304 for If-None-Match)
 * and Range support (one range; 206 and Content-Range, 416 past the end;
 * If-Range); a folder streams as a tar.gz. The
 * download is downloads.h's; this file parses, answers, and paces the
 * download by the answer: it produces only while less than HIGH_WATER
 * waits for the client (the stream's `drained` callback). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "api.h"
#include "downloads.h"
#include "router.h"

#define HIGH_WATER (1u << 20) /* stop producing while this much waits */

/* ---- the answer as the download's sink ---- */

static void file_drained(struct api_request *req);
static void folder_drained(struct api_request *req);

static void answer_started(void *arg)
{
	struct api_request *req = arg;
	api_add_header(req, "X-Archive", "1");
	api_stream_start(req, 200, "application/gzip", folder_drained);
}

static bool answer_ready(void *arg)
{
	struct api_request *req = arg;
	return !api_client_gone(req) && api_stream_pending(req) < HIGH_WATER;
}

static void answer_write(void *arg, const void *bytes, size_t length)
{
	api_stream_write(arg, bytes, length);
}

static void answer_end(void *arg, const char *failed)
{
	struct api_request *req = arg;
	api_set_data(req, NULL, NULL);
	if (failed)
		api_reply_failure(req, FAILURE_INTERNAL, "%s", failed);
	else
		api_stream_end(req);
}

static const struct download_sink answer_sink = {
	.started = answer_started,
	.ready = answer_ready,
	.write = answer_write,
	.end = answer_end,
};

static void file_drained(struct api_request *req)
{
	struct download *download = api_data(req);
	if (download)
		download_resume(download);
}

/* A folder's worker is woken only once most of what waited has gone, so
 * that it writes in big pieces. */
static void folder_drained(struct api_request *req)
{
	struct download *download = api_data(req);
	if (download && api_stream_pending(req) < HIGH_WATER / 4)
		download_resume(download);
}

static void on_client_gone(struct api_request *req)
{
	struct download *download = api_data(req);
	if (download)
		download_cancel(download);
}

/* ---- the request ---- */

/* Parses "bytes=A-B", "bytes=A-" or "bytes=-N" against `size`. 0: no range
 * header; 1: a satisfiable range in *first..*last; -1: unsatisfiable;
 * -2: malformed or several ranges (ignored, as RFC 9110 allows). */
static int parse_range(const char *header, off_t size, off_t *first, off_t *last)
{
	if (!header)
		return 0;
	if (strncmp(header, "bytes=", 6) != 0 || strchr(header, ','))
		return -2;
	const char *spec = header + 6;
	char *end;
	if (*spec == '-') {
		long long suffix = strtoll(spec + 1, &end, 10);
		if (end == spec + 1 || *end || suffix <= 0)
			return suffix == 0 && !*end && end != spec + 1 ? -1 : -2;
		*first = suffix >= size ? 0 : size - suffix;
		*last = size - 1;
		return size > 0 ? 1 : -1;
	}
	long long start = strtoll(spec, &end, 10);
	if (end == spec || *end != '-' || start < 0)
		return -2;
	const char *rest = end + 1;
	long long stop = size - 1;
	if (*rest) {
		stop = strtoll(rest, &end, 10);
		if (end == rest || *end || stop < start)
			return -2;
	}
	if (start >= size)
		return -1;
	*first = start;
	*last = stop >= size ? size - 1 : stop;
	return 1;
}

/* Whether `etag` is among the tags of an If-None-Match header ("*", or a
 * list of tags, weak ones compared weakly as RFC 9110 says). */
static bool etag_listed(const char *header, const char *etag)
{
	size_t length = strlen(etag);
	for (const char *at = header; *at;) {
		at += strspn(at, " \t,");
		if (*at == '*')
			return true;
		if (strncmp(at, "W/", 2) == 0)
			at += 2;
		if (strncmp(at, etag, length) == 0 && (at[length] == '\0' || at[length] == ',' ||
						       at[length] == ' ' || at[length] == '\t'))
			return true;
		at += strcspn(at, ",");
	}
	return false;
}

/* The Range header, unless If-Range names another version of the file
 * (then the whole file goes, RFC 9110 13.1.5). */
static const char *wanted_range(struct api_request *req, const char *etag)
{
	const char *range = api_header(req, "Range");
	const char *if_range = api_header(req, "If-Range");
	return range && if_range && strcmp(if_range, etag) != 0 ? NULL : range;
}

static void send_file(struct api_request *req, struct download *download)
{
	char etag[96];
	download_etag(download, etag, sizeof etag);
	api_add_header(req, "ETag", etag);
	const char *if_none_match = api_header(req, "If-None-Match");
	if (if_none_match && etag_listed(if_none_match, etag)) {
		api_reply_bytes(req, 304, "application/octet-stream", "", 0);
		download_close(download);
		return;
	}
	off_t size = download_size(download), first = 0, last = size - 1;
	int range = parse_range(wanted_range(req, etag), size, &first, &last);
	char header[96];
	api_add_header(req, "X-Archive", "0");
	api_add_header(req, "Accept-Ranges", "bytes");
	if (range == -1) {
		snprintf(header, sizeof header, "bytes */%lld", (long long)size);
		api_add_header(req, "Content-Range", header);
		api_reply_failure(req, FAILURE_RANGE_NOT_SATISFIABLE,
				  "the file has %lld bytes; ask for a range inside them",
				  (long long)size);
		download_close(download);
		return;
	}
	if (range == 1) {
		snprintf(header, sizeof header, "bytes %lld-%lld/%lld", (long long)first,
			 (long long)last, (long long)size);
		api_add_header(req, "Content-Range", header);
	} else {
		first = 0;
		last = size - 1;
	}
	api_set_data(req, download, NULL);
	api_on_client_gone(req, on_client_gone);
	api_stream_start(req, range == 1 ? 206 : 200, "application/octet-stream", file_drained);
	download_file_start(download, first, last, &answer_sink, req);
}

static void send_folder(struct api_request *req, struct download *download)
{
	char why[256];
	if (!download_folder_start(download, &answer_sink, req, why, sizeof why)) {
		api_reply_failure(req, FAILURE_INTERNAL, "%s", why);
		return;
	}
	api_set_data(req, download, NULL);
	api_on_client_gone(req, on_client_gone);
}

static void handle_files(struct api_request *req)
{
	const char *path = api_query(req, "path");
	if (!path || !*path) {
		api_reply_bad_request(
			req, "the path query parameter is missing (a file or folder under %s)",
			api_config()->work_dir);
		return;
	}
	enum failure failure;
	char why[1024];
	struct download *download = download_open(path, &failure, why, sizeof why);
	if (!download)
		api_reply_failure(req, failure, "%s", why);
	else if (download_is_folder(download))
		send_folder(req, download);
	else
		send_file(req, download);
}

const struct api_route api_files_routes[] = {
	{"GET", "/v1/files", 0, 0, handle_files},
	{0},
};
