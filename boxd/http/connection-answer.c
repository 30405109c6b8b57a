/* connection-answer.c: a connection's answers as they go out: the status
 * line (with Date, and Connection when it matters), whole answers, chunked
 * streams, whether the connection closes after one, and the connection's
 * own errors about a head (malformed, too large, too slow). Once an answer
 * is queued the connection goes on with the next request, or closes. */
#include "connection-internal.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "failure.h"
#include "http-errors.h"

/* A stream's producer hears `drained` once the socket has taken this much. */
#define STREAM_LOW (64u << 10)

static const char *reason_of(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 101: return "Switching Protocols";
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 413: return "Content Too Large";
	case 416: return "Range Not Satisfiable";
	case 423: return "Locked";
	case 426: return "Upgrade Required";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	case 507: return "Insufficient Storage";
	default:
		return status < 300 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
	}
}

/* "Date: ..." of this second, formatted once per second. */
const char *conn_date_line(void)
{
	static time_t last;
	static char line[64];
	time_t now = time(NULL);
	if (now != last) {
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(line, sizeof line, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
		last = now;
	}
	return line;
}

static void write_status(struct evbuffer *out, struct http_conn *conn, int status,
			 const char *headers)
{
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n%s%s", status, reason_of(status),
			    conn_date_line(), headers ? headers : "");
	if (conn->close_after)
		evbuffer_add(out, "Connection: close\r\n", 19);
	else if (conn->minor_version == 0)
		evbuffer_add(out, "Connection: keep-alive\r\n", 24);
}

/* Whether this connection can take another request after the answer. */
static void decide_close(struct http_conn *conn)
{
	/* A body not read to its end leaves the stream unframed: close. */
	if (!conn->keep_alive || !conn->body_done || conn->peer_done)
		conn->close_after = true;
}

/* The answer is complete (queued): go on with the next request, or close. */
static void answered(struct http_conn *conn)
{
	conn->req = NULL;
	conn->streaming = false;
	conn->drained = NULL;
	if (conn->heavy || conn->streamed >= HEAVY_BYTES)
		conn_trim_soon(); /* the request is freed by then (right after this) */
	conn->heavy = false;
	conn->streamed = 0;
	if (conn->sink_done) {
		/* The handler answered before taking the whole body. */
		conn_sink_stop(conn);
		conn->close_after = true;
	}
	conn->state = conn->close_after ? CLOSING : WAIT_HEAD;
	if (conn->state == CLOSING) {
		bufferevent_setwatermark(conn->bev, EV_WRITE, 0, 0);
		bufferevent_setwatermark(conn->bev, EV_READ, 0, 0);
		conn->lingering = !conn->body_done && !conn->peer_done;
		if (conn->lingering) {
			conn_linger(conn);
		} else {
			bufferevent_disable(conn->bev, EV_READ);
			event_del(conn->timer);
		}
	}
	conn_later_soon(conn);
}

/* A whole answer goes to the socket at once: left to the bufferevent it
 * would wait for the loop to report the socket writable, a turn of the loop
 * (epoll_ctl, epoll_wait) on every request while the socket almost always
 * has room. What does not fit is written by the bufferevent as before; an
 * error is left for it to meet and report (on_event). */
void conn_send_now(struct http_conn *conn)
{
	struct evbuffer *out = bufferevent_get_output(conn->bev);
	if (!conn->dead && !conn->discarding && evbuffer_get_length(out) > 0)
		evbuffer_write(out, conn->fd);
}

void http_conn_respond(struct http_conn *conn, int status, const char *headers, const void *body,
		       size_t length)
{
	decide_close(conn);
	if (length >= HEAVY_BYTES)
		conn->heavy = true;
	struct evbuffer *out = bufferevent_get_output(conn->bev);
	write_status(out, conn, status, headers);
	/* A 304 has no body, and its Content-Length would have to be the
	 * 200's (RFC 9110, 8.6): none. A 204 must not have one (8.6). */
	if (status == 304 || status == 204)
		evbuffer_add(out, "\r\n", 2);
	else
		evbuffer_add_printf(out, "Content-Length: %zu\r\n\r\n", length);
	if (!conn->is_head_method && length && status != 304 && status != 204)
		evbuffer_add(out, body, length);
	answered(conn);
	conn_send_now(conn);
}

void http_conn_stream_start(struct http_conn *conn, int status, const char *headers,
			    void (*drained)(void *arg), void *arg)
{
	decide_close(conn);
	/* HTTP/1.0 has no chunks: the end of the answer is the end of the connection. */
	conn->stream_chunked = conn->minor_version >= 1;
	if (!conn->stream_chunked)
		conn->close_after = true;
	struct evbuffer *out = bufferevent_get_output(conn->bev);
	write_status(out, conn, status, headers);
	if (conn->stream_chunked)
		evbuffer_add(out, "Transfer-Encoding: chunked\r\n", 28);
	evbuffer_add(out, "\r\n", 2);
	conn->streaming = true;
	conn->drained = drained;
	conn->drained_arg = arg;
	bufferevent_setwatermark(conn->bev, EV_WRITE, STREAM_LOW, 0);
}

void http_conn_stream_write(struct http_conn *conn, const void *data, size_t length)
{
	if (!conn->streaming || conn->is_head_method || length == 0)
		return;
	conn->streamed += length;
	struct evbuffer *out = bufferevent_get_output(conn->bev);
	if (conn->stream_chunked)
		evbuffer_add_printf(out, "%zx\r\n", length);
	evbuffer_add(out, data, length);
	if (conn->stream_chunked)
		evbuffer_add(out, "\r\n", 2);
}

void http_conn_stream_end(struct http_conn *conn)
{
	if (conn->stream_chunked && !conn->is_head_method)
		evbuffer_add(bufferevent_get_output(conn->bev), "0\r\n\r\n", 5);
	bufferevent_setwatermark(conn->bev, EV_WRITE, 0, 0);
	answered(conn);
}

size_t http_conn_pending(struct http_conn *conn)
{
	return evbuffer_get_length(bufferevent_get_output(conn->bev));
}

/* An error of the connection's own, before any route: JSON, then close. */
void conn_refuse(struct http_conn *conn, int status, const char *message)
{
	conn->close_after = true;
	conn->minor_version = 1;
	conn->is_head_method = false;
	conn->streams_body = false;
	/* Whatever else comes is dropped for a moment (a client still sending
	 * its head reads this answer), except from a client too slow to matter. */
	conn->body_done = status == 408;
	char *body = http_error_json(failure_code(http_failure_of_status(status)), message);
	struct evbuffer *out = bufferevent_get_output(conn->bev);
	write_status(out, conn, status, "Content-Type: application/json\r\n");
	evbuffer_add_printf(out, "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
	free(body);
	answered(conn);
}
