#include "fields.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "xalloc.h"

static void reserve(struct fields_writer *writer, size_t more)
{
	if (writer->length + more <= writer->capacity)
		return;
	size_t capacity = writer->capacity ? writer->capacity : 256;
	while (capacity < writer->length + more)
		capacity *= 2;
	writer->data = xrealloc(writer->data, capacity);
	writer->capacity = capacity;
}

void fields_add(struct fields_writer *writer, const char *key, const void *value, size_t length)
{
	char head[128];
	int n = snprintf(head, sizeof head, "%s %zu\n", key, length);
	reserve(writer, (size_t)n + length + 1);
	memcpy(writer->data + writer->length, head, (size_t)n);
	writer->length += (size_t)n;
	if (length)
		memcpy(writer->data + writer->length, value, length);
	writer->length += length;
	writer->data[writer->length++] = '\n';
}

void fields_add_string(struct fields_writer *writer, const char *key, const char *value)
{
	if (value)
		fields_add(writer, key, value, strlen(value));
}

void fields_add_int(struct fields_writer *writer, const char *key, int64_t value)
{
	char text[32];
	int n = snprintf(text, sizeof text, "%" PRId64, value);
	fields_add(writer, key, text, (size_t)n);
}

void fields_writer_free(struct fields_writer *writer)
{
	free(writer->data);
	*writer = (struct fields_writer){0};
}

bool fields_write_fd(const struct fields_writer *writer, int fd)
{
	return io_write_all(fd, writer->data, writer->length);
}

static bool write_file(const struct fields_writer *writer, const char *path, bool durable)
{
	int fd = io_replace_open(path, 0600);
	if (fd < 0)
		return false;
	return io_replace_commit(fd, path, fields_write_fd(writer, fd),
				 durable ? IO_REPLACE_DURABLE : 0);
}

bool fields_write_file(const struct fields_writer *writer, const char *path)
{
	return write_file(writer, path, false);
}

bool fields_write_file_durable(const struct fields_writer *writer, const char *path)
{
	return write_file(writer, path, true);
}

bool fields_write_into(const struct fields_writer *writer, int fd, int dir_fd,
		       const char *temporary, const char *name)
{
	return io_pwrite_all(fd, writer->data, writer->length, 0) &&
	       renameat(dir_fd, temporary, dir_fd, name) == 0;
}

bool fields_next(struct fields_reader *reader, const char **key, const char **value,
		 size_t *value_length, bool *malformed)
{
	*malformed = false;
	if (reader->position >= reader->length)
		return false;
	const char *start = reader->data + reader->position;
	size_t left = reader->length - reader->position;
	const char *newline = memchr(start, '\n', left);
	const char *space = newline ? memchr(start, ' ', (size_t)(newline - start)) : NULL;
	if (!space) {
		*malformed = true;
		return false;
	}
	char *end;
	errno = 0;
	unsigned long long length = strtoull(space + 1, &end, 10);
	size_t header = (size_t)(newline - start) + 1;
	if (errno || end != newline || length > left - header || left - header - length < 1 ||
	    newline[1 + length] != '\n') {
		*malformed = true;
		return false;
	}
	/* Keys are compared with strcmp, so terminate them in a scratch copy. */
	static __thread char key_copy[64];
	size_t key_length = (size_t)(space - start);
	if (key_length >= sizeof key_copy) {
		*malformed = true;
		return false;
	}
	memcpy(key_copy, start, key_length);
	key_copy[key_length] = '\0';
	*key = key_copy;
	*value = newline + 1;
	*value_length = (size_t)length;
	reader->position += header + (size_t)length + 1;
	return true;
}

char *fields_read_file(const char *path, size_t limit, size_t *length)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *data = io_read_to_end(fd, limit, length);
	int saved = errno;
	close(fd);
	errno = saved;
	return data;
}

char *fields_string(const char *value, size_t length)
{
	return xstrndup(value, length);
}

int64_t fields_int(const char *value, size_t length, int64_t fallback)
{
	char text[32];
	if (length == 0 || length >= sizeof text)
		return fallback;
	memcpy(text, value, length);
	text[length] = '\0';
	char *end;
	errno = 0;
	long long parsed = strtoll(text, &end, 10);
	return errno || *end ? fallback : parsed;
}
