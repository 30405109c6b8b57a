#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xalloc.h"

/* The loop of both: pwrite at `offset`, or write when `offset` is < 0. */
static bool write_loop(int fd, const char *at, size_t length, off_t offset)
{
	while (length > 0) {
		ssize_t n = offset < 0 ? write(fd, at, length) : pwrite(fd, at, length, offset);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			return false;
		}
		at += n;
		length -= (size_t)n;
		if (offset >= 0)
			offset += n;
	}
	return true;
}

bool io_write_all(int fd, const void *data, size_t length)
{
	return write_loop(fd, data, length, -1);
}

bool io_pwrite_all(int fd, const void *data, size_t length, off_t offset)
{
	if (offset < 0) {
		errno = EINVAL; /* as pwrite says */
		return false;
	}
	return write_loop(fd, data, length, offset);
}

bool io_read_full(int fd, void *buffer, size_t length)
{
	char *at = buffer;
	while (length > 0) {
		ssize_t n = read(fd, at, length);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = 0;
			return false;
		}
		at += n;
		length -= (size_t)n;
	}
	return true;
}

char *io_read_to_end(int fd, size_t limit, size_t *length)
{
	size_t capacity = 4096, used = 0;
	char *data = xmalloc(capacity);
	for (;;) {
		if (used + 1 >= capacity) {
			if (capacity > limit) {
				free(data);
				errno = EFBIG;
				return NULL;
			}
			capacity *= 2;
			data = xrealloc(data, capacity);
		}
		ssize_t n = read(fd, data + used, capacity - used - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int saved = errno;
			free(data);
			errno = saved;
			return NULL;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	data[used] = '\0';
	if (length)
		*length = used;
	return data;
}

/* PATH.tmp into `out`; false (ENAMETOOLONG) when it does not fit. */
static bool temporary_name(const char *path, char *out, size_t size)
{
	if (snprintf(out, size, "%s.tmp", path) < (int)size)
		return true;
	errno = ENAMETOOLONG;
	return false;
}

int io_replace_open(const char *path, mode_t mode)
{
	char temporary[PATH_MAX];
	if (!temporary_name(path, temporary, sizeof temporary))
		return -1;
	for (int attempt = 0; attempt < 8; attempt++) {
		int fd =
			open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST)
			return fd;
		/* Left by a cut write, or put there: a name, never followed. */
		if (unlink(temporary) != 0 && errno != ENOENT)
			return -1;
	}
	errno = EEXIST;
	return -1;
}

/* The directory of `path`, synced: a rename is on disk once it is. */
static void sync_directory(const char *path)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

bool io_replace_commit(int fd, const char *path, bool written, unsigned flags)
{
	char temporary[PATH_MAX];
	if (!temporary_name(path, temporary, sizeof temporary)) {
		close(fd);
		return false;
	}
	int error = written ? 0 : errno ? errno : EIO;
	if (written && (flags & IO_REPLACE_DURABLE) && fdatasync(fd) != 0)
		error = errno;
	if (close(fd) != 0 && !error)
		error = errno;
	if (!error && rename(temporary, path) != 0)
		error = errno;
	if (error) {
		unlink(temporary);
		errno = error;
		return false;
	}
	if (flags & IO_REPLACE_DURABLE)
		sync_directory(path);
	return true;
}

bool io_replace_file(const char *path, const void *data, size_t length, mode_t mode, unsigned flags)
{
	int fd = io_replace_open(path, mode);
	if (fd < 0)
		return false;
	return io_replace_commit(fd, path, io_write_all(fd, data, length), flags);
}
