/* fields.h: the small length-prefixed format of a shim's spec and state files.
 *
 * A file is a sequence of fields `KEY LENGTH\nVALUE\n`; values are bytes (a
 * command, its stdin, a path that is not UTF-8), so nothing needs escaping and
 * the shim needs no JSON library. Keys may repeat (env, groups). */
#ifndef BOXD_FIELDS_H
#define BOXD_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fields_writer {
	char *data;
	size_t length, capacity;
};

void fields_add(struct fields_writer *writer, const char *key, const void *value, size_t length);
void fields_add_string(struct fields_writer *writer, const char *key, const char *value);
void fields_add_int(struct fields_writer *writer, const char *key, int64_t value);
void fields_writer_free(struct fields_writer *writer);

/* Writes the fields to `path` through a temporary file and rename(2), so a
 * reader sees the whole file or none of it. False with errno set on failure. */
bool fields_write_file(const struct fields_writer *writer, const char *path);
/* The same, on disk before it returns (the file's data, then its directory
 * entry): for what must survive a power cut, off any fast path. */
bool fields_write_file_durable(const struct fields_writer *writer, const char *path);
/* The same through a temporary made ahead: `fd` is the empty file named
 * `temporary` in the directory `dir_fd`; the fields go into it and it is
 * renamed to `name`. One rename on the path of a command instead of a
 * create and a rename. No fsync: these are the run dir's files (RAM in a
 * box), read back by boxd after a crash of boxd, not of the machine. */
bool fields_write_into(const struct fields_writer *writer, int fd, int dir_fd,
		       const char *temporary, const char *name);
/* Writes all of them to `fd` (a pipe or memfd). */
bool fields_write_fd(const struct fields_writer *writer, int fd);

struct fields_reader {
	const char *data;
	size_t length, position;
};

/* Next field; false at the end or on a malformed file (then *malformed). */
bool fields_next(struct fields_reader *reader, const char **key, const char **value,
		 size_t *value_length, bool *malformed);

/* Reads a whole file (at most `limit` bytes) into a NUL-terminated buffer;
 * NULL with errno set on failure. A descriptor: io_read_to_end (io.h). */
char *fields_read_file(const char *path, size_t limit, size_t *length);

/* Value helpers: a NUL-terminated copy, an integer (`fallback` when malformed). */
char *fields_string(const char *value, size_t length);
int64_t fields_int(const char *value, size_t length, int64_t fallback);

#endif
