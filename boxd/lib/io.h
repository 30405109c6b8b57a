/* io.h: whole reads and writes on blocking descriptors, retried across
 * EINTR and short transfers; files replaced whole. */
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

/* ---- replacing a file whole ----
 *
 * The one way boxd, its workers and its shims replace a file: the bytes go
 * to PATH.tmp, made anew (whatever is at that name is unlinked first, then
 * it is created with O_EXCL and O_NOFOLLOW, so nothing a command put there,
 * a link or a FIFO, is written through or waited on), then renamed over
 * PATH: a reader sees the old file or the new one, never half. */
enum io_replace_flags {
	/* The data and the rename reach the disk before the commit returns
	 * (fdatasync, then the directory's fsync): for what must outlive a
	 * power cut (the work dir). Without it, a crash of the process only
	 * (the run dir, RAM in a box). */
	IO_REPLACE_DURABLE = 1u << 0,
};

/* Opens PATH.tmp for writing, mode `mode` from its creation; -1 with errno
 * set. Write it, then io_replace_commit(). */
int io_replace_open(const char *path, mode_t mode);
/* Closes `fd` (from io_replace_open) and, when `written` is true, renames
 * PATH.tmp over PATH; otherwise, or when that fails, removes PATH.tmp.
 * False with errno set (the first error) when PATH was not replaced. */
bool io_replace_commit(int fd, const char *path, bool written, unsigned flags);
/* The whole of it for bytes at hand. */
bool io_replace_file(const char *path, const void *data, size_t length, mode_t mode,
		     unsigned flags);

#endif
