/* exec-stream.c: a subscription to a running job's output, over a second
 * connection to its shim (the first is exec.c's monitor). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "exec-internal.h"
#include "shim-protocol.h"
#include "xalloc.h"

struct exec_stream {
	struct exec_job *job;
	const struct exec_stream_callbacks *callbacks;
	void *arg;
	int fd;
	struct event *input;
	bool paused;
	bool dropped;            /* by the shim: nothing more comes on `fd` */
	struct exec_watch watch; /* a dropped stream waits for the job's end */
	bool watching;
	/* Output bytes the shim sent, and those it said it could not: what the
	 * log holds beyond both is reported as lost when the job ends. */
	unsigned long long received, lost;
};

/* The count in a LOST message: its own bytes only (the receive buffer is
 * reused and holds no terminating NUL). */
static unsigned long long lost_bytes(const char *text, size_t length)
{
	char digits[32];
	if (length >= sizeof digits)
		length = sizeof digits - 1;
	memcpy(digits, text, length);
	digits[length] = '\0';
	return strtoull(digits, NULL, 10);
}

static void stream_lost(struct exec_stream *stream, unsigned long long bytes)
{
	stream->lost += bytes;
	stream->callbacks->lost(stream->arg, (double)bytes);
}

/* The end of the job: its record is read (or taken from the exit notice),
 * then the subscriber is told. The subscriber may close the stream from
 * `ended`, so nothing touches it after. */
static void stream_ended(struct exec_stream *stream, const char *record, size_t length)
{
	exec_job_exit_notice(stream->job, record, length);
	/* The shim's last count may not have reached boxd (its socket was full
	 * when the command ended): the log's total settles it. */
	long long unaccounted = (long long)stream->job->exit.log_bytes -
				(long long)stream->received - (long long)stream->lost;
	if (unaccounted > 0)
		stream_lost(stream, (unsigned long long)unaccounted);
	stream->callbacks->ended(stream->arg);
}

static void on_job_end(void *arg, struct exec_job *job)
{
	struct exec_stream *stream = arg;
	stream->watching = false;
	stream_ended(stream, NULL, 0);
}

/* The shim closed this connection while the command runs (its clients are
 * at SHIM_MAX_CLIENTS): only the command's end can be told now, by the
 * monitor. Its end must not be taken from this: that would record a live
 * command as lost and kill it. */
static void stream_dropped(struct exec_stream *stream)
{
	event_del(stream->input);
	stream->dropped = true;
	if (stream->callbacks->dropped) {
		stream->callbacks->dropped(stream->arg);
		return;
	}
	stream->watch = (struct exec_watch){.ended = on_job_end, .arg = stream};
	stream->watching = true;
	exec_watch(stream->job, &stream->watch);
}

static void on_input(evutil_socket_t fd, short what, void *arg)
{
	struct exec_stream *stream = arg;
	static char message[SHIM_MESSAGE_MAX];
	/* A bounded number of messages per wakeup keeps the loop fair. */
	for (int round = 0; round < 64 && !stream->paused && !stream->dropped; round++) {
		ssize_t n = recv(fd, message, sizeof message, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0 && stream->job->state == EXEC_RUNNING && stream->job->monitor_fd >= 0) {
			stream_dropped(stream);
			return;
		}
		if (n <= 0 || message[0] == SHIM_MSG_EXIT) {
			stream_ended(stream, message + 1, n > 0 ? (size_t)n - 1 : 0);
			return;
		}
		if (message[0] == SHIM_MSG_STDOUT || message[0] == SHIM_MSG_STDERR ||
		    message[0] == SHIM_MSG_REPLAYED) {
			stream->received += (size_t)n - 1;
			stream->callbacks->output(stream->arg, message[0] == SHIM_MSG_STDERR,
						  message + 1, (size_t)n - 1);
		} else if (message[0] == SHIM_MSG_LOST) {
			stream_lost(stream, lost_bytes(message + 1, (size_t)n - 1));
		}
	}
}

/* `how`: SHIM_MSG_SUBSCRIBE, or SHIM_MSG_REPLAY for the terminal's recent
 * output first. */
static struct exec_stream *subscribe(struct exec_job *job, char how,
				     const struct exec_stream_callbacks *callbacks, void *arg)
{
	int fd = exec_connect(job);
	if (fd < 0 || send(fd, &how, 1, MSG_NOSIGNAL) != 1) {
		if (fd >= 0)
			close(fd);
		exec_job_ended(job); /* the shim is gone already: its record says how */
		return NULL;
	}
	struct exec_stream *stream = xcalloc(1, sizeof *stream);
	stream->job = job;
	stream->callbacks = callbacks;
	stream->arg = arg;
	stream->fd = fd;
	stream->input = event_new(exec_loop(), fd, EV_READ | EV_PERSIST, on_input, stream);
	event_add(stream->input, NULL);
	return stream;
}

struct exec_stream *exec_subscribe(struct exec_job *job,
				   const struct exec_stream_callbacks *callbacks, void *arg)
{
	return subscribe(job, SHIM_MSG_SUBSCRIBE, callbacks, arg);
}

struct exec_stream *exec_attach(struct exec_job *job, const struct exec_stream_callbacks *callbacks,
				void *arg)
{
	return subscribe(job, SHIM_MSG_REPLAY, callbacks, arg);
}

bool exec_stream_control(struct exec_stream *stream, enum exec_control what, const char *payload)
{
	static const char kinds[] = {
		[EXEC_CONTROL_RESIZE] = SHIM_MSG_RESIZE,
		[EXEC_CONTROL_SIGNAL] = SHIM_MSG_SIGNAL,
		[EXEC_CONTROL_CLOSE_STDIN] = SHIM_MSG_CLOSE_STDIN,
	};
	char message[64];
	size_t length = payload ? strlen(payload) : 0;
	if (length + 1 > sizeof message)
		return false;
	message[0] = kinds[what];
	if (length)
		memcpy(message + 1, payload, length);
	return send(stream->fd, message, length + 1, MSG_NOSIGNAL | MSG_DONTWAIT) ==
	       (ssize_t)length + 1;
}

void exec_stream_pause(struct exec_stream *stream)
{
	if (stream->paused)
		return;
	event_del(stream->input);
	stream->paused = true;
}

void exec_stream_resume(struct exec_stream *stream)
{
	if (!stream->paused || stream->dropped)
		return;
	stream->paused = false;
	event_add(stream->input, NULL);
}

void exec_stream_close(struct exec_stream *stream)
{
	if (!stream)
		return;
	if (stream->watching)
		exec_unwatch(stream->job, &stream->watch);
	event_free(stream->input);
	close(stream->fd);
	free(stream);
}
