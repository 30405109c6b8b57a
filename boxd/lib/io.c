#include "io.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "xalloc.h"

bool io_write_all(int fd, const void *data, size_t length)
{
	const char *at = data;
	while (length > 0) {
		ssize_t n = write(fd, at, length);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			return false;
		}
		at += n;
		length -= (size_t)n;
	}
	return true;
}

bool io_pwrite_all(int fd, const void *data, size_t length, off_t offset)
{
	const char *at = data;
	while (length > 0) {
		ssize_t n = pwrite(fd, at, length, offset);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			return false;
		}
		at += n;
		length -= (size_t)n;
		offset += n;
	}
	return true;
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
