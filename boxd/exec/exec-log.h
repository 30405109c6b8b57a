/* exec-log.h: reading a command's log (shims/shim-log.c) by the offsets of
 * its whole output.
 *
 * The log is LOG.1 (older output, once the log has rotated at half its cap)
 * followed by LOG. Offsets count the command's output from its first byte
 * ever, the same across rotations: after one the oldest part is gone, so
 * the log starts past 0 (exec_log_start). The view is taken once, at open:
 * reading never blocks, and a file renamed meanwhile is still read through
 * its descriptor. Runs on the event loop (everything is non-blocking). */
#ifndef BOXD_EXEC_LOG_H
#define BOXD_EXEC_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct exec_job;

struct exec_log {
	int fd[2];        /* LOG.1, LOG; -1 when missing */
	uint64_t size[2]; /* as they were at open */
	uint64_t base[2]; /* where each starts in the whole output */
	/* False when the numbering could not be settled (a rotation caught
	 * half-way, again and again): the files are open, their sizes right,
	 * but an offset from the whole output cannot be placed; try again in a
	 * moment. */
	bool numbered;
	ino_t inode; /* LOG's, to tell a rotation from growth */
};

/* Opens the job's log as it is now. False with errno set when LOG cannot
 * be read (ENOENT; EINVAL when something other than a regular file is at
 * its place, which a command can put there): then nothing is open. */
bool exec_log_open(struct exec_log *log, struct exec_job *job);
void exec_log_close(struct exec_log *log);

/* The offset of the oldest byte kept, and the offset after the newest. */
uint64_t exec_log_start(const struct exec_log *log);
uint64_t exec_log_end(const struct exec_log *log);

/* Reads up to `length` bytes at offset `at` (from exec_log_start on): fewer
 * at the end, 0 past it, -1 on a read error. */
ssize_t exec_log_read(struct exec_log *log, void *buffer, size_t length, uint64_t at);

#endif
