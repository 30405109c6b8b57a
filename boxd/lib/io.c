#include "io.h"

#include <errno.h>
#include <stdlib.h>
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
