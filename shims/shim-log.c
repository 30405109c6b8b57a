/* shim-log.c: the command's combined log, capped, keeping the newest output.
 *
 * LOG holds the newest output; when it reaches half the cap it becomes LOG.1
 * (the one before is deleted) and LOG starts again, so at most the cap is on
 * disk and at least half of it is the newest output. boxd's log endpoint
 * reads LOG.1 and LOG as one. A write error (disk full) stops the log, not
 * the command: the error is kept for the exit record and the result.
 *
 * The logs' dir is in the work dir, where commands write, and the ids of
 * commands to come can be read in the run dir (the spares'): a command can
 * put a hard link to any file, or a FIFO, where a later command's log will
 * be. A log is therefore never opened, only made anew (create_log).
 *
 * Offsets a reader gives count the whole output (0: its first byte ever),
 * across rotations: before each one the shim writes, in the state dir,
 * which file becomes LOG.1 (its inode) and where it starts (its base). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "shim-protocol.h"
#include "shim.h"
#include "xalloc.h"

static void log_fail(struct shim_log *log, const char *what, int error)
{
	if (!log->error)
		log->error = xasprintf("the log %s stopped at %" PRIu64 " bytes: %s %s", log->path,
				       log->size, what, strerror(error));
	if (log->fd >= 0)
		close(log->fd);
	log->fd = -1;
}

/* A new empty log at `path`. Whatever is there first is removed: a hard
 * link would have the command's output written over another file, a FIFO
 * would hold the shim in open(). O_EXCL then makes a regular file of our
 * own or fails; EEXIST again means something was put back meanwhile. */
static int create_log(const char *path)
{
	for (int attempt = 0; attempt < 4; attempt++) {
		unlink(path); /* ENOENT for every ordinary command */
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

void log_file_open(struct shim_log *log, const char *path, uint64_t cap, const char *state_dir)
{
	*log = (struct shim_log){.fd = -1, .cap = cap, .path = xstrdup(path)};
	if (state_dir)
		log->base_path = xasprintf("%s/%s", state_dir, SHIM_STATE_LOG_BASE);
	/* A tiny cap would rotate at every write. */
	if (log->cap < 8192)
		log->cap = 8192;
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		/* WORK/.sbx/logs: make the two levels if missing. */
		char *parent = xstrdup(dir);
		char *up = strrchr(parent, '/');
		if (up && up != parent) {
			*up = '\0';
			mkdir(parent, 0755);
		}
		free(parent);
		mkdir(dir, 0755);
	}
	free(dir);
	log->fd = create_log(path);
	if (log->fd < 0)
		log_fail(log, "could not be opened:", errno);
}

/* The current file becomes LOG.1 (replacing the older one) and a new one
 * starts: the newest half of the cap to a whole cap stays on disk, and
 * nothing has to be copied or written back first (collapsing a file's head
 * makes ext4 write back all that follows, which stalled a flood by half). */
/* Names the current file, about to become LOG.1, with its base. Written
 * before the rename: a reader that finds LOG.1 and a record of another
 * inode has caught the rotation half-way and looks again. Best effort: a
 * reader without the record numbers from what the exit record tells. */
static void record_base(struct shim_log *log)
{
	struct stat info;
	if (!log->base_path || fstat(log->fd, &info) != 0)
		return;
	char line[64];
	int n = snprintf(line, sizeof line, "%llu %" PRIu64 "\n", (unsigned long long)info.st_ino,
			 log->base);
	io_replace_file(log->base_path, line, (size_t)n, 0640, 0);
}

static void rotate(struct shim_log *log)
{
	record_base(log);
	char *older = xasprintf("%s.1", log->path);
	if (rename(log->path, older) != 0) {
		free(older);
		log_fail(log, "could not be rotated:", errno);
		return;
	}
	free(older);
	close(log->fd);
	log->fd = create_log(log->path);
	log->base += log->size;
	log->size = 0;
	if (log->fd < 0)
		log_fail(log, "could not be reopened:", errno);
}

void log_file_write(struct shim_log *log, const char *data, size_t length)
{
	log->total += length;
	if (log->fd < 0)
		return;
	if (log->size > 0 && log->size + length > log->cap / 2) {
		rotate(log);
		if (log->fd < 0)
			return;
	}
	if (!io_write_all(log->fd, data, length)) {
		log_fail(log, "could not be written:", errno);
		return;
	}
	log->size += length;
}

void log_file_close(struct shim_log *log)
{
	if (log->fd >= 0 && close(log->fd) != 0)
		log_fail(log, "could not be closed:", errno);
	log->fd = -1;
}
