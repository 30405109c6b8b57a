/* shim-log.c: the command's combined log, capped, keeping the newest output.
 *
 * When the file reaches its cap, its oldest half goes: with
 * FALLOC_FL_COLLAPSE_RANGE where the filesystem has it (ext4, xfs: no data is
 * copied), else by copying the newest half to the front. A write error (disk
 * full) stops the log, not the command: the error is kept for the exit record
 * and the result. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"
#include "xalloc.h"

static void log_fail(struct shim_log *log, const char *what, int error)
{
	if (!log->error)
		log->error = xasprintf("the log %s stopped at %" PRIu64 " bytes: %s %s",
				       log->path, log->size, what, strerror(error));
	if (log->fd >= 0)
		close(log->fd);
	log->fd = -1;
}

void log_file_open(struct shim_log *log, const char *path, uint64_t cap)
{
	*log = (struct shim_log){.fd = -1, .cap = cap, .path = xstrdup(path)};
	/* Keep at least one block so the dropped half stays block aligned. */
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
	log->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (log->fd < 0)
		log_fail(log, "could not be opened:", errno);
}

/* Moves [from, size) to the front by copying, for filesystems without collapse. */
static bool shift_by_copy(struct shim_log *log, uint64_t from)
{
	static char buffer[65536];
	uint64_t src = from, dst = 0;
	while (src < log->size) {
		ssize_t n = pread(log->fd, buffer, sizeof buffer, (off_t)src);
		if (n <= 0)
			return false;
		if (pwrite(log->fd, buffer, (size_t)n, (off_t)dst) != n)
			return false;
		src += (uint64_t)n;
		dst += (uint64_t)n;
	}
	return ftruncate(log->fd, (off_t)dst) == 0;
}

static void drop_oldest(struct shim_log *log)
{
	/* Drop enough that the newest half of the cap stays, block aligned. */
	uint64_t keep = log->cap / 2;
	uint64_t drop = (log->size - keep) & ~(uint64_t)4095;
	if (drop == 0)
		return;
	if (fallocate(log->fd, FALLOC_FL_COLLAPSE_RANGE, 0, (off_t)drop) != 0) {
		/* The fd is write-only; copying needs to read it too. */
		int rw = open(log->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (rw < 0) {
			log_fail(log, "could not be shortened:", errno);
			return;
		}
		close(log->fd);
		log->fd = rw;
		if (!shift_by_copy(log, drop)) {
			log_fail(log, "could not be shortened:", errno);
			return;
		}
	}
	log->size -= drop;
	lseek(log->fd, (off_t)log->size, SEEK_SET);
}

void log_file_write(struct shim_log *log, const char *data, size_t length)
{
	log->total += length;
	if (log->fd < 0)
		return;
	if (log->size + length > log->cap) {
		drop_oldest(log);
		if (log->fd < 0)
			return;
	}
	while (length) {
		ssize_t n = write(log->fd, data, length);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			log_fail(log, "could not be written:", n < 0 ? errno : ENOSPC);
			return;
		}
		log->size += (uint64_t)n;
		data += n;
		length -= (size_t)n;
	}
}

void log_file_close(struct shim_log *log)
{
	if (log->fd >= 0 && close(log->fd) != 0)
		log_fail(log, "could not be closed:", errno);
	log->fd = -1;
}
