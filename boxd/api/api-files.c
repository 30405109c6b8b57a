/* api-files.c: GET /v1/files?path=... (API.md, "Sync and files").
 *
 * A regular file streams as it is, with Range support; a directory streams
 * as a tar.gz made by the sandboxed archive worker, with the directory as
 * its top entry. Both go out a chunk at a time, only while the client keeps
 * up (the stream's `drained` callback), so memory stays flat for any size.
 * Paths resolve beneath the work dir (openat2 RESOLVE_BENEATH): neither
 * ".." nor a symbolic link can lead a download outside it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <event2/event.h>

#include "api.h"
#include "router.h"
#include "archive-client.h"
#include "config.h"
#include "steps.h"
#include "work-path.h"
#include "xalloc.h"

#define CHUNK (256u * 1024)
#define HIGH_WATER (1u << 20) /* stop producing while this much waits */

struct download {
	struct api_request *req;
	char *path;         /* as shown in steps */
	int fd;             /* the file */
	off_t position, end; /* file: what is left to send */
	uint64_t sent;
	bool started, finished;
	struct archive_call *archive; /* a folder: its worker */
};

static void download_free(struct download *download)
{
	if (download->fd >= 0)
		close(download->fd);
	free(download->path);
	free(download);
}

static void on_download_gone(struct api_request *req);

/* ---- a regular file ---- */

static void file_pump(struct api_request *req)
{
	struct download *download = api_data(req);
	char *buffer = xmalloc(CHUNK);
	while (!download->finished && api_stream_pending(req) < HIGH_WATER) {
		size_t want = download->end - download->position < (off_t)CHUNK
				      ? (size_t)(download->end - download->position)
				      : CHUNK;
		ssize_t got = want ? pread(download->fd, buffer, want, download->position) : 0;
		if (got <= 0 || api_client_gone(req)) {
			/* The end, or the file shrank under us: the stream ends short. */
			download->finished = true;
			steps_add("get", "%s (%" PRIu64 " bytes)", download->path, download->sent);
			api_set_data(req, NULL, NULL);
			api_stream_end(req);
			download_free(download);
			break;
		}
		api_stream_write(req, buffer, (size_t)got);
		download->position += got;
		download->sent += (uint64_t)got;
	}
	free(buffer);
}

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

static void send_file(struct api_request *req, struct download *download, const struct stat *st)
{
	off_t first = 0, last = st->st_size - 1;
	int range = parse_range(api_header(req, "Range"), st->st_size, &first, &last);
	char header[96];
	api_add_header(req, "X-Archive", "0");
	api_add_header(req, "Accept-Ranges", "bytes");
	if (range == -1) {
		snprintf(header, sizeof header, "bytes */%lld", (long long)st->st_size);
		api_add_header(req, "Content-Range", header);
		api_reply_failure(req, FAILURE_RANGE_NOT_SATISFIABLE,
				"the file has %lld bytes; ask for a range inside them", (long long)st->st_size);
		download_free(download);
		return;
	}
	if (range == 1) {
		snprintf(header, sizeof header, "bytes %lld-%lld/%lld", (long long)first, (long long)last,
			 (long long)st->st_size);
		api_add_header(req, "Content-Range", header);
	} else {
		first = 0;
		last = st->st_size - 1;
	}
	download->position = first;
	download->end = last + 1;
	api_set_data(req, download, NULL);
	api_on_client_gone(req, on_download_gone);
	api_stream_start(req, range == 1 ? 206 : 200, "application/octet-stream", file_pump);
	file_pump(req);
}

/* ---- a directory, through the archive worker ---- */

static void archive_drained(struct api_request *req);

static void on_archive_data(void *arg, const void *bytes, size_t length)
{
	struct download *download = arg;
	struct api_request *req = download->req;
	if (!download->started) {
		download->started = true;
		api_add_header(req, "X-Archive", "1");
		api_stream_start(req, 200, "application/gzip", archive_drained);
	}
	api_stream_write(req, bytes, length);
	download->sent += length;
	/* Let the worker block on a full pipe until the client catches up. */
	if (api_stream_pending(req) >= HIGH_WATER)
		archive_call_pause(download->archive);
}

static void on_archive_end(void *arg, bool complete, const char *why)
{
	struct download *download = arg;
	struct api_request *req = download->req;
	api_set_data(req, NULL, NULL);
	if (download->started) {
		steps_add("get", "%s as tar.gz (%" PRIu64 " bytes)%s", download->path, download->sent,
			  complete ? "" : ", cut short");
		api_stream_end(req); /* a failure midway shows as a truncated gzip */
	} else {
		api_reply_failure(req, FAILURE_INTERNAL, "the folder could not be archived: %s", why);
	}
	download_free(download);
}

static const struct archive_stream_handlers archive_handlers = {
	.data = on_archive_data,
	.end = on_archive_end,
};

static void archive_drained(struct api_request *req)
{
	struct download *download = api_data(req);
	if (download && api_stream_pending(req) < HIGH_WATER / 4)
		archive_call_resume(download->archive);
}

/* Deferred out of the connection's close callback. */
static void end_abandoned_file(evutil_socket_t fd, short events, void *arg)
{
	struct api_request *req = arg;
	struct download *download = api_data(req);
	if (download && !download->finished)
		file_pump(req); /* sees the client gone and ends */
}

static void on_download_gone(struct api_request *req)
{
	struct download *download = api_data(req);
	if (!download)
		return;
	if (!download->archive) {
		event_base_once(api_base(req), -1, EV_TIMEOUT, end_abandoned_file, req, NULL);
		return;
	}
	archive_call_cancel(download->archive); /* its end still comes */
}

static void send_directory(struct api_request *req, struct download *download,
			   const char *relative)
{
	char why[256];
	download->archive = archive_client_create(relative, &archive_handlers, download, why,
						  sizeof why);
	if (!download->archive) {
		api_reply_failure(req, FAILURE_INTERNAL, "%s", why);
		download_free(download);
		return;
	}
	api_set_data(req, download, NULL);
	api_on_client_gone(req, on_download_gone);
}

static int open_in_work(const char *work_dir, const char *relative)
{
	int work_fd = open(work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (work_fd < 0)
		return -1;
	int fd = work_path_open_beneath(work_fd, relative[0] ? relative : ".", O_RDONLY | O_NONBLOCK);
	int saved = errno;
	close(work_fd);
	errno = saved;
	return fd;
}

static void handle_files(struct api_request *req)
{
	const char *path = api_query(req, "path");
	if (!path || !*path) {
		api_reply_bad_request(req, "the path query parameter is missing (a file or folder under %s)",
				      api_config()->work_dir);
		return;
	}
	const char *why = NULL;
	char *relative = work_path_relative(api_config()->work_dir, path, &why);
	if (!relative) {
		api_reply_bad_request(req, "the path %s %s", path, why);
		return;
	}
	int fd = open_in_work(api_config()->work_dir, relative);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (errno == EXDEV || errno == ELOOP)
			api_reply_bad_request(req, "the path %s leads outside the work dir", path);
		else if (errno == ENOENT || errno == ENOTDIR)
			api_reply_not_found(req, "nothing at %s", path);
		else
			api_reply_failure(req, FAILURE_INTERNAL, "cannot open %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(relative);
		return;
	}
	struct download *download = xcalloc(1, sizeof *download);
	download->path = xstrdup(path);
	download->req = req;
	if (S_ISREG(st.st_mode)) {
		download->fd = fd;
		send_file(req, download, &st);
	} else if (S_ISDIR(st.st_mode) && !relative[0]) {
		close(fd);
		download->fd = -1;
		api_reply_bad_request(req, "%s is the work dir itself; name a folder inside it", path);
		download_free(download);
	} else if (S_ISDIR(st.st_mode)) {
		close(fd);
		download->fd = -1;
		send_directory(req, download, relative);
	} else {
		close(fd);
		download->fd = -1;
		api_reply_bad_request(req, "%s is neither a regular file nor a folder", path);
		download_free(download);
	}
	free(relative);
}

const struct api_route api_files_routes[] = {
	{"GET", "/v1/files", 0, 0, handle_files},
	{0},
};
