/* connection-body.c: a request's body as it comes: gathered in memory up
 * to the route's limit, or streamed into the fd the handler gives (spliced
 * from the socket into a pipe when nothing is buffered), framed by
 * Content-Length or decoded from chunks, after a 100 Continue when the
 * client waits for one. The same pump drops a body after an early answer
 * (connection-drain.c). */
#include "connection-internal.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "failure.h"
#include "http-parser.h"

/* Delivers `length` body bytes at the input's start. Returns how many were taken. */
static ssize_t deliver(struct http_conn *conn, struct evbuffer *input, const char *data,
		       size_t length, enum pump *result)
{
	if (conn->discarding) {
		evbuffer_drain(input, length);
		conn->discarded += length;
		return (ssize_t)length;
	}
	if (conn->state == READ_BODY) {
		if (evbuffer_get_length(conn->body) + length > conn->body_limit) {
			*result = PUMP_TOO_LARGE;
			return -1;
		}
		evbuffer_remove_buffer(input, conn->body, length);
		return (ssize_t)length;
	}
	ssize_t wrote = write(conn->sink_fd, data, length);
	if (wrote < 0) {
		conn->sink_error = errno;
		*result = errno == EAGAIN || errno == EINTR ? PUMP_BLOCKED : PUMP_SINK_FAILED;
		return -1;
	}
	evbuffer_drain(input, (size_t)wrote);
	if ((size_t)wrote < length) {
		*result = PUMP_BLOCKED;
		return wrote;
	}
	return wrote;
}

/* How much of the body the next run of data may take straight from the
 * socket (0: framing comes first, or there is nothing left). */
static uint64_t data_run(struct http_conn *conn)
{
	if (conn->body_kind == HTTP_BODY_LENGTH)
		return conn->body_left;
	return http_chunked_data_left(&conn->chunked);
}

/* `length` bytes of body data were taken from the socket. */
static void body_taken(struct http_conn *conn, size_t length)
{
	if (conn->body_kind == HTTP_BODY_LENGTH) {
		conn->body_left -= length;
		conn->body_done = conn->body_left == 0;
	} else {
		http_chunked_take(&conn->chunked, length);
	}
}

/* Reads what the socket has, up to `length`, and writes all of it into the
 * sink fd; returns as direct() does. */
static ssize_t read_into_sink(struct http_conn *conn, char *buffer, size_t length,
			      enum pump *result)
{
	ssize_t got = read(conn->fd, buffer, length);
	if (got <= 0)
		return 0; /* nothing now, or the end: the bufferevent sees it too */
	body_taken(conn, (size_t)got);
	for (ssize_t done = 0; done < got;) {
		ssize_t wrote = write(conn->sink_fd, buffer + done, (size_t)(got - done));
		if (wrote < 0 && errno == EINTR)
			continue;
		if (wrote <= 0) {
			conn->sink_error = wrote < 0 ? errno : EIO;
			*result = PUMP_SINK_FAILED;
			return -1;
		}
		done += wrote;
	}
	return got;
}

/* With nothing buffered, body data goes from the socket to the sink fd
 * directly: spliced into a pipe (the archive worker's stdin), or read in
 * big pieces for a file (or to be dropped), instead of libevent's 4 KiB
 * reads and a copy. Returns what was taken from the socket, 0 when it has
 * nothing now (or ended), -1 with *result set when the sink is full or
 * failed. What was read counts as taken even when the sink then fails, so
 * the framing stays right for the drain after the answer. */
static ssize_t direct(struct http_conn *conn, uint64_t want, enum pump *result)
{
	static char buffer[256 << 10];
	if (want > sizeof buffer)
		want = sizeof buffer;
	if (conn->discarding) {
		ssize_t got = read(conn->fd, buffer, (size_t)want);
		if (got <= 0)
			return 0;
		body_taken(conn, (size_t)got);
		conn->discarded += (uint64_t)got;
		return got;
	}
	if (conn->sink_is_pipe && !conn->no_splice) {
		ssize_t moved = splice(conn->fd, NULL, conn->sink_fd, NULL, (size_t)want,
				       SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
		if (moved > 0)
			body_taken(conn, (size_t)moved);
		if (moved >= 0)
			return moved;
		if (errno == EAGAIN) {
			/* The socket is empty or the pipe full: the pipe says which. */
			struct pollfd probe = {.fd = conn->sink_fd, .events = POLLOUT};
			if (poll(&probe, 1, 0) == 1 && (probe.revents & POLLOUT))
				return 0;
			*result = PUMP_BLOCKED;
			return -1;
		}
		if (errno != EINVAL && errno != ENOSYS) {
			conn->sink_error = errno;
			*result = PUMP_SINK_FAILED;
			return -1;
		}
		conn->no_splice = true; /* fall back to reading */
	}
	if (conn->sink_is_pipe) {
		/* A pipe takes only what fits: never read more than that. */
		struct pollfd probe = {.fd = conn->sink_fd, .events = POLLOUT};
		if (poll(&probe, 1, 0) != 1 || !(probe.revents & POLLOUT)) {
			*result = PUMP_BLOCKED;
			return -1;
		}
		if (want > PIPE_BUF)
			want = PIPE_BUF;
	}
	return read_into_sink(conn, buffer, (size_t)want, result);
}

/* Moves body bytes from the socket's input to the body buffer or the sink. */
enum pump conn_body_pump(struct http_conn *conn)
{
	struct evbuffer *input = bufferevent_get_input(conn->bev);
	enum pump result = PUMP_MORE;
	uint64_t dropped_before = conn->discarded;
	while (!conn->body_done) {
		if (conn->discarded - dropped_before >= DRAIN_TURN_BYTES)
			return PUMP_MORE; /* the rest on a later turn (drain_body) */
		struct evbuffer_iovec piece;
		if (evbuffer_peek(input, -1, NULL, &piece, 1) < 1 || piece.iov_len == 0) {
			bool straight = conn->state == RUNNING || conn->discarding;
			uint64_t want = straight ? data_run(conn) : 0;
			ssize_t moved = want ? direct(conn, want, &result) : 0;
			if (moved < 0)
				return result;
			if (moved == 0)
				return PUMP_MORE;
			continue;
		}
		const char *data = piece.iov_base;
		size_t length = piece.iov_len;
		if (conn->body_kind == HTTP_BODY_LENGTH) {
			if (length > conn->body_left)
				length = (size_t)conn->body_left;
			ssize_t took = deliver(conn, input, data, length, &result);
			if (took < 0)
				return result;
			conn->body_left -= (uint64_t)took;
			conn->body_done = conn->body_left == 0;
			if (result == PUMP_BLOCKED)
				return result;
			continue;
		}
		size_t used;
		enum http_chunked_result step =
			http_chunked_feed(&conn->chunked, data, length, &used);
		if (step == HTTP_CHUNKED_ERROR)
			return PUMP_ERROR;
		if (step != HTTP_CHUNKED_DATA) {
			evbuffer_drain(input, used);
			conn->body_done = step == HTTP_CHUNKED_DONE;
			continue;
		}
		ssize_t took = deliver(conn, input, data, used, &result);
		if (took < 0)
			return result;
		http_chunked_take(&conn->chunked, (size_t)took);
		if (result == PUMP_BLOCKED)
			return result;
	}
	return PUMP_DONE;
}

void conn_send_continue(struct http_conn *conn)
{
	if (conn->expect_continue && !conn->continue_sent && !conn->body_done) {
		evbuffer_add(bufferevent_get_output(conn->bev), "HTTP/1.1 100 Continue\r\n\r\n",
			     25);
		conn->continue_sent = true;
	}
}

/* The sink's fd was taken over: closed here, once it is done with. */
void conn_sink_stop(struct http_conn *conn)
{
	if (conn->sink_event)
		event_free(conn->sink_event);
	conn->sink_event = NULL;
	if (conn->sink_fd >= 0)
		close(conn->sink_fd);
	conn->sink_fd = -1;
	conn->sink_done = NULL;
}

/* Streams what has arrived into the sink; ends it, or waits for the fd. */
void conn_sink_pump(struct http_conn *conn)
{
	enum pump result = conn_body_pump(conn);
	if (result == PUMP_BLOCKED) {
		event_del(conn->timer); /* the consumer is slow, not the client */
		event_add(conn->sink_event, NULL);
		return;
	}
	if (result == PUMP_MORE) {
		if (conn->peer_done)
			conn_free(conn); /* the rest of the body can no longer come */
		else
			conn_arm_timer(conn, conn_idle_timeout());
		return;
	}
	event_del(conn->timer);
	void (*done)(void *, bool, int) = conn->sink_done;
	void *arg = conn->sink_arg;
	int error = conn->sink_error;
	conn_sink_stop(conn);
	bufferevent_setwatermark(conn->bev, EV_READ, 0, HEAD_INPUT_HIGH);
	if (result == PUMP_DONE) {
		done(arg, true, 0);
	} else if (result == PUMP_SINK_FAILED) {
		done(arg, false, error);
	} else { /* malformed chunks: the request cannot be trusted */
		done(arg, false, EPROTO);
		conn->close_after = true;
	}
}

static void on_sink_writable(evutil_socket_t fd, short what, void *arg)
{
	struct http_conn *conn = arg;
	conn_enter(conn);
	if (conn->sink_done)
		conn_sink_pump(conn);
	conn_leave(conn);
}

void http_conn_body_to_fd(struct http_conn *conn, int fd,
			  void (*done)(void *arg, bool complete, int error), void *arg)
{
	conn->sink_fd = fd;
	conn->sink_done = done;
	conn->sink_arg = arg;
	struct stat st;
	conn->sink_is_pipe = fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
	conn->sink_event = event_new(conn_loop(), fd, EV_WRITE, on_sink_writable, conn);
	bufferevent_setwatermark(conn->bev, EV_READ, 0, BODY_INPUT_HIGH);
	conn_send_continue(conn);
	/* On the connection's next turn: done() never runs inside this call. */
	conn_later_soon(conn);
}

/* READ_BODY: gathers the body, then runs the request. */
void conn_read_body(struct http_conn *conn)
{
	enum pump result = conn_body_pump(conn);
	if (result == PUMP_MORE) {
		if (conn->peer_done)
			conn_free(conn);
		else
			conn_arm_timer(conn, conn_idle_timeout());
		return;
	}
	event_del(conn->timer);
	struct api_request *req = conn->req;
	if (result == PUMP_TOO_LARGE) {
		conn->close_after = true;
		conn_router()->too_large(req, 0);
		return;
	}
	if (result == PUMP_ERROR) {
		conn->close_after = true;
		conn_router()->fail(req, FAILURE_BAD_REQUEST, "the chunked body is malformed");
		return;
	}
	struct evbuffer *body = conn->body;
	conn->body = NULL;
	conn->state = RUNNING;
	bufferevent_setwatermark(conn->bev, EV_READ, 0, HEAD_INPUT_HIGH);
	bool heavy = evbuffer_get_length(body) >= HEAVY_BYTES;
	conn->heavy = conn->heavy || heavy;
	conn_router()->run(req, body);
	/* Also now: a handler that answers much later (a foreground command)
	 * has let the body go already (api_body_release). */
	if (heavy)
		conn_trim_soon();
}
