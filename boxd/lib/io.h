/* io.h: whole reads and writes on blocking descriptors, retried across
 * EINTR and short transfers. */
#ifndef BOXD_IO_H
#define BOXD_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Writes all `length` bytes; false with errno set when it cannot (ENOSPC
 * when write() took nothing). */
bool io_write_all(int fd, const void *data, size_t length);
/* The same at `offset`, leaving the file position alone (pwrite). */
bool io_pwrite_all(int fd, const void *data, size_t length, off_t offset);
/* Reads exactly `length` bytes; false at an early end of file (errno 0) or
 * on an error. */
bool io_read_full(int fd, void *buffer, size_t length);
/* Reads to the end of file into a NUL-terminated buffer (caller frees),
 * `*length` bytes without the NUL (`length` may be NULL). NULL with errno
 * on an error, or EFBIG past about `limit` bytes. */
char *io_read_to_end(int fd, size_t limit, size_t *length);

#endif
