/* connection.c: one HTTP/1.1 connection on its bufferevent, from accept
 * (under the connection cap) to its free: its heads read and its requests
 * started, the loop's callbacks (read, write, EOF or error, timers) turned
 * into what its state calls for, and the heap handed back after heavy
 * requests or many connections. Its answers are connection-answer.c's,
 * its bodies connection-body.c's, what it reads after an early answer
 * connection-drain.c's, and a connection that left HTTP
 * connection-upgrade.c's. */
#include "connection-internal.h"

#include <malloc.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "failure.h"
#include "http-errors.h"
#include "http-parser.h"
#include "log.h"
#include "xalloc.h"

/* The most one read from the socket takes. */
#define READ_SIZE (256u << 10)
/* Pipelined requests are not started while this much of earlier answers waits. */
#define OUTPUT_HIGH (1u << 20)
/* The heap goes back this long after a request of HEAVY_BYTES or more: a
 * burst of them is trimmed once, and an idle boxd has no timer at all. */
#define TRIM_DELAY_MS 300

static struct event_base *loop;
static struct event *trim_timer;
static int idle_timeout_sec = 60;
static struct http_conn *connections;
static size_t connection_count, connection_cap;
static size_t connection_peak; /* since the heap was last handed back */

/* The cap leaves fds for what boxd runs besides connections (commands'
 * pipes, workers, files): an eighth of the limit, at least 64. */
static size_t cap_from_limit(void)
{
	struct rlimit limit;
	if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
		return 16384;
	size_t total = (size_t)limit.rlim_cur;
	size_t reserve = total / 8 > 64 ? total / 8 : 64;
	size_t cap = total > reserve + 16 ? total - reserve : 16;
	return cap < 65536 ? cap : 65536;
}

static void trim_heap(evutil_socket_t fd, short what, void *arg)
{
	malloc_trim(0);
}

static struct http_conn_router router;

void http_conn_setup(struct event_base *base, int idle_sec, const struct http_conn_router *given)
{
	loop = base;
	router = *given;
	trim_timer = evtimer_new(base, trim_heap, NULL);
	idle_timeout_sec = idle_sec > 0 ? idle_sec : 60;
	connection_cap = cap_from_limit();
}

struct event_base *conn_loop(void)
{
	return loop;
}

const struct http_conn_router *conn_router(void)
{
	return &router;
}

int conn_idle_timeout(void)
{
	return idle_timeout_sec;
}

static void conn_lost(struct http_conn *conn);

/* ---- lifetime ---- */

/* The free pages of the heap go back to the system in a moment, once:
 * glibc returns only the top of its heap by itself, and what a big request
 * freed below something still in use would stay resident for good. */
void conn_trim_soon(void)
{
	if (trim_timer && !evtimer_pending(trim_timer, NULL)) {
		struct timeval later = {0, TRIM_DELAY_MS * 1000};
		evtimer_add(trim_timer, &later);
	}
}

/* After many connections have come and gone (a burst of clients, 10,000
 * idle ones), the heap they used goes back to the system: boxd idles small. */
static void maybe_trim(void)
{
	if (connection_count == 0 && connection_peak >= 256) {
		connection_peak = 0;
		conn_trim_soon();
	}
}

/* Frees now, or when the callback running on it returns. */
void conn_free(struct http_conn *conn)
{
	conn->dead = true;
	if (conn->busy)
		return;
	if (conn->req)
		conn_lost(conn);
	conn_raw_closed(conn);
	conn_sink_stop(conn);
	if (conn->prev)
		conn->prev->next = conn->next;
	else
		connections = conn->next;
	if (conn->next)
		conn->next->prev = conn->prev;
	connection_count--;
	if (conn->body)
		evbuffer_free(conn->body);
	event_free(conn->timer);
	event_free(conn->later);
	bufferevent_free(conn->bev); /* closes the socket */
	free(conn);
	maybe_trim();
}

void conn_enter(struct http_conn *conn)
{
	conn->busy++;
}

/* Leaves a callback: frees a connection that died during it. */
void conn_leave(struct http_conn *conn)
{
	if (--conn->busy == 0 && conn->dead)
		conn_free(conn);
}

/* The client went (or must be dropped) with a request in flight: a body
 * being streamed ends short (its fd closed), the router tells the handler. */
static void conn_lost(struct http_conn *conn)
{
	struct api_request *req = conn->req;
	conn->req = NULL;
	conn_sink_stop(conn);
	if (req)
		router.lost(req);
}

void conn_later_soon(struct http_conn *conn)
{
	event_active(conn->later, EV_TIMEOUT, 0);
}

void conn_arm_timer(struct http_conn *conn, int seconds)
{
	struct timeval delay = {seconds, 0};
	event_add(conn->timer, &delay);
}

static int head_timeout(void)
{
	return idle_timeout_sec < HTTP_HEAD_TIMEOUT_SEC ? idle_timeout_sec : HTTP_HEAD_TIMEOUT_SEC;
}

/* ---- heads ---- */

/* Starts the request whose head is `head`. */
static void start_request(struct http_conn *conn, struct http_head *head)
{
	conn->is_head_method = strcmp(head->method, "HEAD") == 0;
	conn->keep_alive = head->keep_alive;
	conn->minor_version = head->minor_version;
	conn->expect_continue = head->expect_continue;
	conn->continue_sent = false;
	conn->body_kind = head->body;
	conn->body_left = head->content_length;
	conn->body_done = head->body == HTTP_BODY_NONE;
	http_chunked_init(&conn->chunked);
	uint64_t declared = head->body == HTTP_BODY_LENGTH ? head->content_length : 0;
	struct api_request *req = router.begin(conn, head);
	conn->req = req;
	conn->streams_body = router.streams_body(req);
	if (conn->streams_body) {
		conn->state = RUNNING;
		router.run(req, NULL);
		return;
	}
	conn->body_limit = router.body_limit(req);
	if (declared > conn->body_limit) {
		/* Refused from the head alone: the body is never read. */
		conn->close_after = true;
		conn->state = RUNNING;
		router.too_large(req, declared);
		return;
	}
	conn->state = READ_BODY;
	conn->body = evbuffer_new();
	bufferevent_setwatermark(conn->bev, EV_READ, 0, BODY_INPUT_HIGH);
	conn_send_continue(conn);
	conn_read_body(conn);
}

/* The peer sent all it will: what is still to send goes, then the end. */
static void close_when_flushed(struct http_conn *conn)
{
	conn->state = CLOSING;
	conn->lingering = false;
	bufferevent_setwatermark(conn->bev, EV_WRITE, 0, 0);
	event_del(conn->timer);
	if (http_conn_pending(conn) == 0)
		conn_free(conn);
}

/* WAIT_HEAD: looks for a complete head in the input. */
static void read_head(struct http_conn *conn)
{
	struct evbuffer *input = bufferevent_get_input(conn->bev);
	/* Empty lines before a request line are skipped (RFC 9112 2.2). */
	for (;;) {
		unsigned char start[2];
		if (evbuffer_copyout(input, start, 2) != 2 || start[0] != '\r' || start[1] != '\n')
			break;
		evbuffer_drain(input, 2);
	}
	size_t length = evbuffer_get_length(input);
	if (length == 0) {
		if (conn->peer_done) {
			close_when_flushed(conn);
			return;
		}
		if (conn->head_started || !evtimer_pending(conn->timer, NULL)) {
			conn->head_started = false;
			conn_arm_timer(conn, idle_timeout_sec);
		}
		return;
	}
	if (!conn->head_started) {
		conn->head_started = true;
		conn_arm_timer(conn, head_timeout());
	}
	struct evbuffer_ptr end = evbuffer_search(input, "\r\n\r\n", 4, NULL);
	size_t head_length = end.pos >= 0 ? (size_t)end.pos + 4 : 0;
	if (head_length > HTTP_HEAD_LIMIT || (!head_length && length > HTTP_HEAD_LIMIT)) {
		conn_refuse(conn, 431,
			    "the request's head (request line and headers) is over 64 KiB");
		return;
	}
	if (!head_length) {
		if (conn->peer_done)
			close_when_flushed(conn); /* a head cut short: nobody to answer */
		return;
	}
	struct http_head head;
	const char *why = NULL;
	int status = http_parse_head((const char *)evbuffer_pullup(input, (ev_ssize_t)head_length),
				     head_length, &head, &why);
	evbuffer_drain(input, head_length);
	conn->head_started = false;
	event_del(conn->timer);
	if (status) {
		conn_refuse(conn, status, why);
		return;
	}
	start_request(conn, &head);
}

/* Does what the connection's state calls for with what has arrived. An
 * answer given meanwhile brings it back here through `later`, so pipelined
 * requests take turns with other connections instead of recursing. */
static void conn_process(struct http_conn *conn)
{
	if (conn->dead)
		return;
	switch (conn->state) {
	case WAIT_HEAD:
		if (http_conn_pending(conn) > OUTPUT_HIGH)
			return; /* the client reads its answers slowly: wait (on_write) */
		read_head(conn);
		break;
	case READ_BODY: conn_read_body(conn); break;
	case RUNNING:
		if (conn->sink_done)
			conn_sink_pump(conn);
		break;
	case CLOSING:
		conn_drop_unread(conn);
		if (!conn->lingering && http_conn_pending(conn) == 0)
			conn_free(conn);
		break;
	case UPGRADED: conn_raw_input(conn); break;
	}
}

/* ---- libevent callbacks ---- */

static void on_read(struct bufferevent *bev, void *arg)
{
	struct http_conn *conn = arg;
	conn_enter(conn);
	conn_process(conn);
	conn_leave(conn);
}

static void on_write(struct bufferevent *bev, void *arg)
{
	struct http_conn *conn = arg;
	conn_enter(conn);
	if (conn->state == CLOSING) {
		if (http_conn_pending(conn) == 0 && !conn->lingering)
			conn_free(conn);
	} else if (conn->state == UPGRADED) {
		conn_raw_drained(conn);
	} else if (conn->streaming && conn->drained)
		conn->drained(conn->drained_arg);
	else if (conn->state == WAIT_HEAD)
		conn_process(conn);
	conn_leave(conn);
}

static void on_later(evutil_socket_t fd, short what, void *arg)
{
	struct http_conn *conn = arg;
	conn_enter(conn);
	conn_process(conn);
	conn_leave(conn);
}

/* EOF: a peer that closed entirely is gone; one that only shut its sending
 * side (a half-close) still reads its answer. */
static bool peer_fully_closed(int fd)
{
	struct pollfd probe = {.fd = fd, .events = POLLOUT};
	return poll(&probe, 1, 0) == 1 && (probe.revents & (POLLHUP | POLLERR));
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct http_conn *conn = arg;
	conn_enter(conn);
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR)) {
		conn->peer_done = true;
		if (conn->state == UPGRADED) {
			conn_process(conn); /* what came before the EOF, then the end */
		} else if (conn->state == WAIT_HEAD) {
			conn_process(conn);
		} else if (conn->state == CLOSING) {
			conn_stop_lingering(conn);
			if (peer_fully_closed(conn->fd) || http_conn_pending(conn) == 0)
				conn_free(conn);
		} else if (peer_fully_closed(conn->fd)) {
			conn_free(conn); /* nobody reads the answer */
		} else if (!conn->body_done) {
			conn_process(conn); /* the body's rest may be in the input yet */
		}
	} else {
		conn_free(conn); /* a socket error, a write that timed out */
	}
	conn_leave(conn);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct http_conn *conn = arg;
	conn_enter(conn);
	if (conn->state == CLOSING) {
		conn_stop_lingering(conn);
		if (http_conn_pending(conn) == 0)
			conn_free(conn);
	} else if (conn->state == UPGRADED) {
		/* no deadline of HTTP's: the protocol keeps its own */
	} else if (conn->state == WAIT_HEAD && conn->head_started) {
		conn_refuse(conn, 408, "the request's head did not arrive in time");
	} else if (conn->state == READ_BODY) {
		conn->close_after = true;
		char why[96];
		snprintf(why, sizeof why, "the request's body stopped arriving for %d s",
			 idle_timeout_sec);
		router.fail(conn->req, FAILURE_TIMEOUT, why);
	} else {
		conn_free(conn); /* idle between requests, or a streamed body stalled */
	}
	conn_leave(conn);
}

/* ---- accepting ---- */

static void refuse_at_cap(int fd)
{
	char message[160];
	snprintf(message, sizeof message, "boxd has %zu connections open, its limit; retry shortly",
		 connection_count);
	char *body = http_error_json("unavailable", message);
	char answer[512];
	int length =
		snprintf(answer, sizeof answer,
			 "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\nRetry-After: 1\r\n\r\n%s",
			 strlen(body), body);
	free(body);
	(void)!send(fd, answer, (size_t)length, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
	static time_t logged;
	if (time(NULL) - logged >= 60) {
		log_msg(LOG_LEVEL_WARNING,
			"%zu connections open, the cap: refusing new ones with 503",
			connection_count);
		logged = time(NULL);
	}
}

void http_conn_accept(int fd)
{
	if (connection_count >= connection_cap) {
		refuse_at_cap(fd);
		return;
	}
	struct http_conn *conn = xcalloc(1, sizeof *conn);
	conn->fd = fd;
	conn->sink_fd = -1;
	conn->bev = bufferevent_socket_new(loop, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!conn->bev) {
		close(fd);
		free(conn);
		return;
	}
	conn->timer = evtimer_new(loop, on_timer, conn);
	conn->later = event_new(loop, -1, 0, on_later, conn);
	conn->next = connections;
	if (connections)
		connections->prev = conn;
	connections = conn;
	if (++connection_count > connection_peak)
		connection_peak = connection_count;
	bufferevent_setcb(conn->bev, on_read, on_write, on_event, conn);
	bufferevent_setwatermark(conn->bev, EV_READ, 0, HEAD_INPUT_HIGH);
	bufferevent_set_max_single_read(conn->bev, READ_SIZE);
	/* An answer the client does not read for this long ends the connection. */
	struct timeval write_limit = {idle_timeout_sec, 0};
	bufferevent_set_timeouts(conn->bev, NULL, &write_limit);
	bufferevent_enable(conn->bev, EV_READ | EV_WRITE);
	conn_arm_timer(conn, idle_timeout_sec);
}

void http_conn_close_all(void)
{
	while (connections) {
		struct http_conn *conn = connections;
		conn->busy = 0;
		conn_free(conn);
	}
	if (trim_timer)
		event_free(trim_timer);
	trim_timer = NULL;
}

pid_t http_conn_peer_pid(const struct http_conn *conn)
{
	struct sockaddr_storage address = {0};
	socklen_t length = sizeof address;
	if (getsockname(conn->fd, (struct sockaddr *)&address, &length) != 0 ||
	    address.ss_family != AF_UNIX)
		return 0;
	struct ucred credentials;
	length = sizeof credentials;
	if (getsockopt(conn->fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0)
		return -1;
	return credentials.pid;
}
