/* connection-upgrade.c: a connection that left HTTP (101 Switching
 * Protocols, for WebSocket): its bytes go to the new protocol's ops as they
 * arrive, its output is written as given, and its end, whatever causes it,
 * is told once. No idle or head deadline applies (the protocol keeps its
 * own), and nothing is pipelined: HTTP never reads this connection again. */
#include "connection-internal.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

/* Read into at most this before reading pauses: the protocol takes its
 * input as it comes, so this bounds only a burst. */
#define RAW_INPUT_HIGH BODY_INPUT_HIGH
/* The ops hear `drained` once the socket has taken this much. */
#define RAW_OUTPUT_LOW (64u << 10)

void http_conn_upgrade(struct http_conn *conn, const char *headers, const struct http_raw_ops *ops,
		       void *arg)
{
	conn->req = NULL;
	conn->streaming = false;
	conn->drained = NULL;
	conn->head_started = false;
	conn->state = UPGRADED;
	conn->raw_ops = ops;
	conn->raw_arg = arg;
	event_del(conn->timer);
	struct evbuffer *out = bufferevent_get_output(conn->bev);
	evbuffer_add_printf(out, "HTTP/1.1 101 Switching Protocols\r\n%s%s\r\n", conn_date_line(),
			    headers ? headers : "");
	bufferevent_setwatermark(conn->bev, EV_READ, 0, RAW_INPUT_HIGH);
	bufferevent_setwatermark(conn->bev, EV_WRITE, RAW_OUTPUT_LOW, 0);
	conn_send_now(conn);
	/* A peer that did not wait for the 101, or left already: its bytes
	 * (or its EOF) are handled on the next turn, outside the handler. */
	if (evbuffer_get_length(bufferevent_get_input(conn->bev)) || conn->peer_done)
		conn_later_soon(conn);
}

void conn_raw_input(struct http_conn *conn)
{
	struct evbuffer *input = bufferevent_get_input(conn->bev);
	if (evbuffer_get_length(input))
		conn->raw_ops->input(conn->raw_arg, input);
	if (conn->state == UPGRADED && conn->peer_done)
		conn_free(conn);
}

void conn_raw_drained(struct http_conn *conn)
{
	if (conn->raw_ops->drained)
		conn->raw_ops->drained(conn->raw_arg);
}

void conn_raw_closed(struct http_conn *conn)
{
	const struct http_raw_ops *ops = conn->raw_ops;
	conn->raw_ops = NULL;
	if (ops)
		ops->closed(conn->raw_arg);
}

void http_conn_raw_write(struct http_conn *conn, const void *data, size_t length)
{
	if (conn->state == UPGRADED && !conn->dead && length)
		evbuffer_add(bufferevent_get_output(conn->bev), data, length);
}

void http_conn_raw_close(struct http_conn *conn, bool linger)
{
	if (conn->state != UPGRADED || conn->dead)
		return;
	conn->state = CLOSING;
	conn->streams_body = false;
	conn->discarding = false;
	bufferevent_setwatermark(conn->bev, EV_WRITE, 0, 0);
	bufferevent_setwatermark(conn->bev, EV_READ, 0, 0);
	conn->lingering = linger && !conn->peer_done;
	if (conn->lingering) {
		conn_linger(conn);
	} else {
		bufferevent_disable(conn->bev, EV_READ);
		event_del(conn->timer);
	}
	conn_send_now(conn);
	if (!conn->lingering && http_conn_pending(conn) == 0)
		conn_free(conn);
	else if (conn->lingering)
		conn_later_soon(conn); /* drops what already waits in the input */
}
