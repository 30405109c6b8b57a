/* connection-drain.c: what a connection reads after an answer that left
 * the request's body unread, before it closes: a streamed body is read
 * through its framing to its end and dropped while the answer waits
 * (bounded: DRAIN_*), any other is dropped for a moment (LINGER_*), so the
 * client reads the answer instead of failing its write. */
#include "connection-internal.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <sys/time.h>

#include "clock.h"
#include "http-parser.h"

/* After an answer that left the body unread (413, an early error), what
 * still comes is read and dropped for a moment before the close, so a
 * client still writing its body reads the answer instead of failing its
 * write (as nginx's lingering close does). */
#define LINGER_SEC 2
#define LINGER_BYTES (16u << 20)
/* A streamed body (an upload) answered early, refused at its first entry or
 * on a full disk, is read to its end and dropped instead, and the answer
 * waits for that end: the real sync client pipes tar into Node's fetch,
 * whose undici stops writing a body the moment a whole answer has come
 * (and closes), which leaves tar blocked on its output for good, and a
 * client that writes before it reads (Python's http.client) fails its write
 * when the connection closes under it. Bounded so a refused client holds
 * its connection only while it is sending: 1 GiB, 10 s without a byte,
 * 120 s in all (a 40 MB archive needs 0.3 MB/s to make it); then the
 * answer goes and the connection closes. */
#define DRAIN_BYTES (1ull << 30)
#define DRAIN_IDLE_SEC 10
#define DRAIN_TOTAL_MS (120 * 1000)

/* An answer came before a streamed body ended: the rest is read through
 * its framing and dropped (DRAIN_*) while the answer waits, unless the
 * client waits for a 100 Continue it was not sent (it sends no body) or the
 * body's declared length passes the bound: then only the short linger. */
static bool start_draining(struct http_conn *conn)
{
	if (!conn->streams_body || (conn->expect_continue && !conn->continue_sent) ||
	    (conn->body_kind == HTTP_BODY_LENGTH && conn->body_left > DRAIN_BYTES))
		return false;
	conn->discarding = true;
	conn->discarded = 0;
	conn->drain_deadline_ms = clock_monotonic_ms() + DRAIN_TOTAL_MS;
	bufferevent_disable(conn->bev, EV_WRITE); /* the answer waits */
	conn_arm_timer(conn, DRAIN_IDLE_SEC);
	return true;
}

/* The answer left the body unread: a streamed body is drained to its end
 * while the answer waits, else what comes is dropped for LINGER_SEC. */
void conn_linger(struct http_conn *conn)
{
	if (!start_draining(conn))
		conn_arm_timer(conn, LINGER_SEC);
}

/* The end of what is read before the close; an answer that waited goes. */
void conn_stop_lingering(struct http_conn *conn)
{
	conn->lingering = false;
	bufferevent_disable(conn->bev, EV_READ);
	event_del(conn->timer);
	if (conn->discarding) {
		conn->discarding = false;
		bufferevent_enable(conn->bev, EV_WRITE);
		conn_send_now(conn);
	}
}

/* Bytes keep coming: DRAIN_IDLE_SEC more, within the whole drain's time. */
static void drain_rearm(struct http_conn *conn)
{
	int64_t left = conn->drain_deadline_ms - clock_monotonic_ms();
	if (left <= 0) {
		conn_stop_lingering(conn);
		return;
	}
	if (left > DRAIN_IDLE_SEC * 1000)
		left = DRAIN_IDLE_SEC * 1000;
	struct timeval delay = {(time_t)(left / 1000), (suseconds_t)(left % 1000) * 1000};
	event_add(conn->timer, &delay);
}

/* CLOSING after an early answer to a streamed body: drops what has come,
 * until the body's end (or malformed framing) or the bounds. */
static void drain_body(struct http_conn *conn)
{
	uint64_t before = conn->discarded;
	enum pump result = conn_body_pump(conn);
	if (result != PUMP_MORE || conn->discarded > DRAIN_BYTES) {
		conn_stop_lingering(conn);
		return;
	}
	if (conn->discarded > before)
		drain_rearm(conn);
	if (conn->discarded - before >= DRAIN_TURN_BYTES)
		conn_later_soon(conn); /* more may wait in the input, with the socket quiet */
}

/* CLOSING: drops what has arrived of a body the answer left unread. */
void conn_drop_unread(struct http_conn *conn)
{
	if (conn->discarding) {
		drain_body(conn);
	} else if (conn->lingering) {
		struct evbuffer *input = bufferevent_get_input(conn->bev);
		conn->discarded += evbuffer_get_length(input);
		evbuffer_drain(input, evbuffer_get_length(input));
		if (conn->discarded > LINGER_BYTES)
			conn_stop_lingering(conn);
	}
}
