/* exec-log.c: a command's log as one file numbered by its whole output
 * (exec-log.h). */
#include "exec-log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec-internal.h"
#include "shim-protocol.h"
#include "xalloc.h"

/* A rotation caught half-way is over in microseconds: a few looks settle it. */
#define LOG_OPEN_ATTEMPTS 8

/* `path` opened for reading when it is a regular file, else -1. The work
 * dir is the commands': a FIFO put in a log's place must not hold boxd's
 * loop in open() or read(). */
static int open_regular(const char *path, struct stat *info)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd >= 0 && (fstat(fd, info) != 0 || !S_ISREG(info->st_mode))) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

/* The shim's record of LOG.1: its inode and base. False when there is none
 * (no rotation yet, a shim from before it wrote one, or a command found
 * again after a reboot: the run dir is gone). */
static bool read_record(struct exec_job *job, uint64_t *inode, uint64_t *base)
{
	char *path = exec_state_path(job->id, SHIM_STATE_LOG_BASE);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	free(path);
	if (fd < 0)
		return false;
	char text[64];
	ssize_t n = read(fd, text, sizeof text - 1);
	close(fd);
	if (n <= 0)
		return false;
	text[n] = '\0';
	unsigned long long i, b;
	if (sscanf(text, "%llu %llu", &i, &b) != 2)
		return false;
	*inode = i;
	*base = b;
	return true;
}

/* Without the shim's record: an ended command's log ends at the count its
 * exit record gives (when the log never stopped short); else the log is
 * taken to start at 0, true until a second rotation. */
static uint64_t guess_start(const struct exec_log *log, struct exec_job *job)
{
	uint64_t kept = log->size[0] + log->size[1];
	if (job->state == EXEC_ENDED && !job->exit.log_error && job->exit.log_bytes >= 0 &&
	    (uint64_t)job->exit.log_bytes >= kept)
		return (uint64_t)job->exit.log_bytes - kept;
	return 0;
}

/* One look: LOG first, then LOG.1, then the record, then LOG's name again.
 * When LOG is still the file opened, no rotation came in between, so LOG.1
 * is its predecessor and the record (written before a rotation's rename)
 * names LOG.1 unless the next rotation is under way. */
static bool look(struct exec_log *log, struct exec_job *job, const char *path, const char *older)
{
	struct stat info[2];
	log->fd[1] = open_regular(path, &info[1]);
	if (log->fd[1] < 0)
		return false;
	log->fd[0] = open_regular(older, &info[0]);
	for (int i = 0; i < 2; i++)
		log->size[i] = log->fd[i] >= 0 ? (uint64_t)info[i].st_size : 0;
	log->inode = info[1].st_ino;
	uint64_t inode, base;
	bool recorded = read_record(job, &inode, &base);
	struct stat now;
	bool settled = stat(path, &now) == 0 && now.st_ino == info[1].st_ino;
	if (log->fd[0] < 0) {
		log->base[0] = log->base[1] = guess_start(log, job);
	} else if (recorded && inode == (uint64_t)info[0].st_ino) {
		log->base[0] = base;
		log->base[1] = base + log->size[0];
	} else if (!recorded) {
		log->base[0] = guess_start(log, job);
		log->base[1] = log->base[0] + log->size[0];
	} else {
		/* The record names another file: mid-rotation. The sizes still
		 * hold, for a reader that counts from the start. */
		log->base[0] = 0;
		log->base[1] = log->size[0];
		settled = false;
	}
	log->numbered = settled;
	return true;
}

bool exec_log_open(struct exec_log *log, struct exec_job *job)
{
	*log = (struct exec_log){.fd = {-1, -1}};
	const char *path = job->meta.log_path;
	char *older = xasprintf("%s.1", path);
	bool opened = false;
	for (int attempt = 0; attempt < LOG_OPEN_ATTEMPTS; attempt++) {
		if (attempt)
			sched_yield(); /* let the shim finish its rename */
		opened = look(log, job, path, older);
		if (!opened || log->numbered)
			break;
		if (attempt + 1 < LOG_OPEN_ATTEMPTS)
			exec_log_close(log);
	}
	free(older);
	return opened;
}

void exec_log_close(struct exec_log *log)
{
	for (int i = 0; i < 2; i++) {
		if (log->fd[i] >= 0)
			close(log->fd[i]);
		log->fd[i] = -1;
	}
}

uint64_t exec_log_start(const struct exec_log *log)
{
	return log->fd[0] >= 0 ? log->base[0] : log->base[1];
}

uint64_t exec_log_end(const struct exec_log *log)
{
	return log->base[1] + log->size[1];
}

ssize_t exec_log_read(struct exec_log *log, void *buffer, size_t length, uint64_t at)
{
	char *out = buffer;
	size_t done = 0;
	for (int i = 0; i < 2 && done < length; i++) {
		if (log->fd[i] < 0 || at >= log->base[i] + log->size[i])
			continue;
		uint64_t from = at > log->base[i] ? at - log->base[i] : 0;
		size_t n = length - done;
		if (n > log->size[i] - from)
			n = (size_t)(log->size[i] - from);
		ssize_t got = pread(log->fd[i], out + done, n, (off_t)from);
		if (got < 0)
			return done ? (ssize_t)done : -1;
		done += (size_t)got;
		at += (uint64_t)got;
		if ((size_t)got < n)
			break;
	}
	return (ssize_t)done;
}
