/* exec-kept.c: which ended commands are kept, and for how long.
 *
 * Ended jobs wait in two queues, foreground and background, in the order
 * they ended, with their counts and the bytes they hold; past the bounds
 * of exec.h the oldest go first (exec_forget). Swept when a command
 * starts, so an idle boxd needs no timer, and a start pays only for what
 * it forgets. */
#include "exec-internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "shim-protocol.h"

/* Ended jobs of one kind in the order they ended, with what they hold. */
struct ended_queue {
	struct exec_job *oldest, *newest;
	size_t count;
	uint64_t bytes;
};
static struct ended_queue ended_foreground, ended_background;

static struct ended_queue *ended_queue_of(const struct exec_job *job)
{
	return job->meta.background ? &ended_background : &ended_foreground;
}

static void ended_append(struct exec_job *job)
{
	struct ended_queue *queue = ended_queue_of(job);
	job->ended_prev = queue->newest;
	job->ended_next = NULL;
	if (queue->newest)
		queue->newest->ended_next = job;
	else
		queue->oldest = job;
	queue->newest = job;
	queue->count++;
	queue->bytes += job->kept_bytes;
}

static void ended_unlink(struct exec_job *job)
{
	struct ended_queue *queue = ended_queue_of(job);
	if (job->ended_prev)
		job->ended_prev->ended_next = job->ended_next;
	else
		queue->oldest = job->ended_next;
	if (job->ended_next)
		job->ended_next->ended_prev = job->ended_prev;
	else
		queue->newest = job->ended_prev;
	queue->count--;
	queue->bytes -= job->kept_bytes;
}

/* What an ended job holds in the run dir: its stdout and stderr captures,
 * in its exit record or in files beside it. */
static uint64_t captured_bytes(const struct exec_job *job)
{
	if (job->exit.has_captures)
		return job->exit.capture_lengths[0] + job->exit.capture_lengths[1];
	const char *id = job->id;
	uint64_t total = 0;
	const char *names[] = {SHIM_STATE_STDOUT, SHIM_STATE_STDERR};
	for (int i = 0; i < 2; i++) {
		char *path = exec_state_path(id, names[i]);
		struct stat info;
		if (stat(path, &info) == 0)
			total += (uint64_t)info.st_size;
		free(path);
	}
	return total;
}

/* What an ended job keeps, for the byte bounds: its captures, and its
 * command's text and note (a background one's in memory, for the list; a
 * foreground one's in its meta file), so 1,000 results of 1 MiB commands
 * cannot hold 1 GiB. */
static uint64_t kept_bytes_of(const struct exec_job *job)
{
	uint64_t text =
		(job->meta.cmd ? strlen(job->meta.cmd) : 0) + (job->note ? strlen(job->note) : 0);
	return captured_bytes(job) + text;
}

/* Over the bounds (exec.h) with `oldest` the oldest ended job of `queue`. */
static bool over_bounds(const struct ended_queue *queue, const struct exec_job *oldest, int64_t now)
{
	if (queue == &ended_background)
		return queue->count > EXEC_KEEP_ENDED_BACKGROUND ||
		       queue->bytes > EXEC_KEEP_ENDED_BACKGROUND_BYTES;
	return queue->count > EXEC_KEEP_ENDED_COUNT || queue->bytes > EXEC_KEEP_ENDED_BYTES ||
	       now - oldest->ended_monotonic > EXEC_KEEP_ENDED_MS;
}

/* Oldest first, until one is kept: a start pays for what it forgets, not
 * for the thousand results a busy box keeps. A held job stays. */
static void sweep_queue(struct ended_queue *queue, int64_t now)
{
	struct exec_job *job = queue->oldest;
	while (job && over_bounds(queue, job, now)) {
		struct exec_job *next = job->ended_next;
		if (!job->busy)
			exec_forget(job);
		job = next;
	}
}

void exec_kept_sweep(void)
{
	int64_t now = clock_monotonic_ms();
	sweep_queue(&ended_foreground, now);
	sweep_queue(&ended_background, now);
}

void exec_kept_add(struct exec_job *job)
{
	job->kept_bytes = kept_bytes_of(job);
	ended_append(job);
}

void exec_kept_remove(struct exec_job *job)
{
	ended_unlink(job);
}
