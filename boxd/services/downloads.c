/* downloads.c: a download's life: its path resolved and opened, then its
 * bytes pulled a chunk at a time while the reader keeps up (a file, with
 * pread) or let through as the archive worker makes them (a folder). */
#include "downloads.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "archive-client.h"
#include "config.h"
#include "steps.h"
#include "work-path.h"
#include "xalloc.h"

#define CHUNK (256u * 1024)

static struct event_base *loop; /* given at downloads_init */
static const char *work_dir;    /* likewise */

void downloads_init(struct event_base *base, const struct boxd_config *config)
{
	loop = base;
	work_dir = config->work_dir;
}

struct download {
	char *path;     /* as the caller named it, for steps */
	char *relative; /* a folder: relative to the work dir */
	int fd;         /* a file; else -1 */
	off_t size;
	struct stat st;      /* a file: as opened */
	off_t position, end; /* a file: what is left to send */
	uint64_t sent;
	bool started, finished, cancelled;
	struct archive_call *archive; /* a folder's worker, once started */
	const struct download_sink *sink;
	void *arg;
};

static void download_free(struct download *download)
{
	if (download->fd >= 0)
		close(download->fd);
	free(download->path);
	free(download->relative);
	free(download);
}

void download_close(struct download *download)
{
	download_free(download);
}

bool download_is_folder(const struct download *download)
{
	return download->fd < 0;
}

off_t download_size(const struct download *download)
{
	return download->size;
}

void download_etag(const struct download *download, char *etag, size_t etag_size)
{
	const struct stat *st = &download->st;
	snprintf(etag, etag_size, "\"%" PRIx64 "-%" PRIx64 "-%" PRIx64 "-%" PRIx64 ".%lx\"",
		 (uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
		 (uint64_t)st->st_mtim.tv_sec, (unsigned long)st->st_mtim.tv_nsec);
}

static int open_in_work(const char *relative)
{
	int work_fd = open(work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (work_fd < 0)
		return -1;
	int fd = work_path_open_beneath(work_fd, relative[0] ? relative : ".",
					O_RDONLY | O_NONBLOCK);
	int saved = errno;
	close(work_fd);
	errno = saved;
	return fd;
}

/* `path` names no regular file or folder to send: why. */
static enum failure refuse_open(const char *path, int fd, const struct stat *st, char *message,
				size_t message_size)
{
	if (fd < 0) {
		if (errno == EXDEV || errno == ELOOP) {
			snprintf(message, message_size, "the path %s leads outside the work dir",
				 path);
			return FAILURE_BAD_REQUEST;
		}
		if (errno == ENOENT || errno == ENOTDIR) {
			snprintf(message, message_size, "nothing at %s", path);
			return FAILURE_NOT_FOUND;
		}
		snprintf(message, message_size, "cannot open %s: %s", path, strerror(errno));
		return FAILURE_INTERNAL;
	}
	if (S_ISDIR(st->st_mode)) /* a folder, but the work dir's own */
		snprintf(message, message_size,
			 "%s is the work dir itself; name a folder inside it", path);
	else
		snprintf(message, message_size, "%s is neither a regular file nor a folder", path);
	return FAILURE_BAD_REQUEST;
}

struct download *download_open(const char *path, enum failure *failure, char *message,
			       size_t message_size)
{
	const char *why = NULL;
	char *relative = work_path_relative(work_dir, path, &why);
	if (!relative) {
		snprintf(message, message_size, "the path %s %s", path, why);
		*failure = FAILURE_BAD_REQUEST;
		return NULL;
	}
	int fd = open_in_work(relative);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) < 0) {
		int error = errno;
		close(fd);
		fd = -1;
		errno = error;
	}
	bool file = fd >= 0 && S_ISREG(st.st_mode);
	bool folder = fd >= 0 && S_ISDIR(st.st_mode) && relative[0];
	if (!file && !folder) {
		*failure = refuse_open(path, fd, &st, message, message_size);
		if (fd >= 0)
			close(fd);
		free(relative);
		return NULL;
	}
	struct download *download = xcalloc(1, sizeof *download);
	download->path = xstrdup(path);
	download->fd = -1;
	if (file) {
		download->fd = fd;
		download->size = st.st_size;
		download->st = st;
		free(relative);
	} else {
		close(fd);
		download->relative = relative;
	}
	return download;
}

/* ---- a regular file ---- */

static void file_end(struct download *download)
{
	download->finished = true;
	steps_add("get", "%s (%" PRIu64 " bytes)", download->path, download->sent);
	download->sink->end(download->arg, NULL);
	download_free(download);
}

/* Sends chunks while the reader takes them; the end, or a file that shrank
 * under us, ends the stream (short). */
static void file_pump(struct download *download)
{
	char *buffer = xmalloc(CHUNK);
	while (!download->cancelled && download->sink->ready(download->arg)) {
		off_t left = download->end - download->position;
		size_t want = left < (off_t)CHUNK ? (size_t)left : CHUNK;
		ssize_t got = want ? pread(download->fd, buffer, want, download->position) : 0;
		if (got <= 0) {
			file_end(download);
			break;
		}
		download->sink->write(download->arg, buffer, (size_t)got);
		download->position += got;
		download->sent += (uint64_t)got;
	}
	free(buffer);
}

void download_file_start(struct download *download, off_t first, off_t last,
			 const struct download_sink *sink, void *arg)
{
	download->sink = sink;
	download->arg = arg;
	download->position = first;
	download->end = last + 1;
	file_pump(download);
}

/* Out of download_cancel(): its caller may be the reader's own leaving. */
static void end_cancelled_file(evutil_socket_t fd, short events, void *arg)
{
	file_end(arg);
}

/* ---- a folder, through the archive worker ---- */

static void on_archive_data(void *arg, const void *bytes, size_t length)
{
	struct download *download = arg;
	if (!download->started) {
		download->started = true;
		download->sink->started(download->arg);
	}
	download->sink->write(download->arg, bytes, length);
	download->sent += length;
	/* The worker blocks on its full pipe until the reader catches up. */
	if (!download->sink->ready(download->arg))
		archive_call_pause(download->archive);
}

static void on_archive_end(void *arg, bool complete, const char *why)
{
	struct download *download = arg;
	if (download->started) {
		steps_add("get", "%s as tar.gz (%" PRIu64 " bytes)%s", download->path,
			  download->sent, complete ? "" : ", cut short");
		download->sink->end(download->arg, NULL); /* midway: a truncated gzip */
	} else {
		char failed[600];
		snprintf(failed, sizeof failed, "the folder could not be archived: %s", why);
		download->sink->end(download->arg, failed);
	}
	download_free(download);
}

static const struct archive_stream_handlers archive_handlers = {
	.data = on_archive_data,
	.end = on_archive_end,
};

bool download_folder_start(struct download *download, const struct download_sink *sink, void *arg,
			   char *message, size_t message_size)
{
	download->sink = sink;
	download->arg = arg;
	download->archive = archive_client_create(download->relative, &archive_handlers, download,
						  message, message_size);
	if (!download->archive) {
		download_free(download);
		return false;
	}
	return true;
}

/* ---- either ---- */

void download_resume(struct download *download)
{
	if (download->cancelled)
		return;
	if (download->archive)
		archive_call_resume(download->archive);
	else
		file_pump(download);
}

void download_cancel(struct download *download)
{
	download->cancelled = true;
	if (download->archive)
		archive_call_cancel(download->archive); /* its end still comes */
	else
		event_base_once(loop, -1, EV_TIMEOUT, end_cancelled_file, download, NULL);
}
