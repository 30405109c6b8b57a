/* connection-internal.h: what the files of one connection (connection.c,
 * connection-answer.c, connection-body.c, connection-drain.c) share and
 * nothing else includes: the connection itself, its states, the limits
 * more than one of them applies and their calls into each other. The
 * router's face is connection.h. */
#ifndef BOXD_CONNECTION_INTERNAL_H
#define BOXD_CONNECTION_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "connection.h"
#include "http-parser.h"

struct bufferevent;
struct event;
struct event_base;
struct evbuffer;

/* The socket is read into at most this much before reading pauses: a body
 * its consumer has not taken yet (BODY_INPUT_HIGH), or else a head and a
 * little more (pipelined requests waiting their turn), so a connection
 * whose request runs long holds no more than that of what it sends. */
#define BODY_INPUT_HIGH (256u << 10)
#define HEAD_INPUT_HIGH (HTTP_HEAD_LIMIT + (4u << 10))
/* A body or an answer this big leaves free memory worth handing back (a
 * 2 MB JSON array parses into 80 MB of small nodes). */
#define HEAVY_BYTES (64u << 10)
/* What one turn of the loop drops before other connections get theirs. */
#define DRAIN_TURN_BYTES (1u << 20)

enum conn_state {
	WAIT_HEAD, /* between requests, or in a head */
	READ_BODY, /* a buffered body, before the request runs */
	RUNNING,   /* the request runs (and may stream its body into an fd) */
	CLOSING,   /* the last answer goes out, then the connection closes */
	UPGRADED,  /* HTTP is over (101): its bytes are raw_ops' (connection-upgrade.c) */
};

struct http_conn {
	struct bufferevent *bev;
	int fd;
	enum conn_state state;
	struct event *timer; /* idle, head deadline, body stall */
	struct event *later; /* continues after an answer, outside the caller's stack */
	int busy;            /* inside one of its callbacks: freeing waits */
	bool dead;
	bool head_started; /* the timer is the head's deadline */
	bool peer_done;    /* the peer sent EOF (it may still read: half-close) */
	/* the request */
	struct api_request *req;
	bool is_head_method, keep_alive, expect_continue, continue_sent;
	int minor_version;
	enum http_body_kind body_kind;
	uint64_t body_left; /* Content-Length bodies */
	struct http_chunked chunked;
	bool body_done;
	bool streams_body;     /* the route takes its body as a stream (API_STREAM_BODY) */
	struct evbuffer *body; /* READ_BODY: what arrived */
	size_t body_limit;
	/* a body streamed into an fd */
	int sink_fd;
	struct event *sink_event;
	void (*sink_done)(void *arg, bool complete, int error);
	void *sink_arg;
	int sink_error;
	bool sink_is_pipe; /* the socket splices into it, no copy through boxd */
	bool no_splice;    /* the socket cannot splice (vsock): read and write */
	/* the answer */
	bool streaming, stream_chunked, close_after;
	bool lingering;    /* CLOSING: dropping the rest of an unread body */
	bool discarding;   /* ... read through its framing, to its end (DRAIN_*) */
	bool heavy;        /* the request's body or its answer was HEAVY_BYTES or more */
	uint64_t streamed; /* of a streamed answer so far */
	uint64_t discarded;
	int64_t drain_deadline_ms;
	void (*drained)(void *arg);
	void *drained_arg;
	/* upgraded (kept while CLOSING after it, so closed runs at the free) */
	const struct http_raw_ops *raw_ops;
	void *raw_arg;
	struct http_conn *prev, *next;
};

/* connection.c: what http_conn_setup was given: the loop, the router, --idle-timeout. */
struct event_base *conn_loop(void);
const struct http_conn_router *conn_router(void);
int conn_idle_timeout(void);

/* Frees now, or when the callback running on it returns (conn_leave). */
void conn_free(struct http_conn *conn);
void conn_enter(struct http_conn *conn);
void conn_leave(struct http_conn *conn);
/* The connection goes on with what it has (conn_process) on its next turn
 * of the loop, outside the caller's stack. */
void conn_later_soon(struct http_conn *conn);
void conn_arm_timer(struct http_conn *conn, int seconds);
/* The heap's free pages go back to the system in a moment, once. */
void conn_trim_soon(void);

/* connection-answer.c: writes what the output holds now, without waiting for a turn of the loop. */
void conn_send_now(struct http_conn *conn);
/* "Date: ...\r\n" of this second. */
const char *conn_date_line(void);
/* An error of the connection's own, before any route: JSON, then close. */
void conn_refuse(struct http_conn *conn, int status, const char *message);

/* connection-body.c */
enum pump {
	PUMP_MORE, /* wants more from the socket */
	PUMP_DONE,
	PUMP_BLOCKED, /* the sink fd is full */
	PUMP_ERROR,   /* malformed chunked framing */
	PUMP_TOO_LARGE,
	PUMP_SINK_FAILED,
};

/* Moves body bytes from the socket's input to the body buffer, the sink,
 * or (draining) nowhere. */
enum pump conn_body_pump(struct http_conn *conn);
/* Sends 100 Continue if the client waits for it. */
void conn_send_continue(struct http_conn *conn);
/* READ_BODY: gathers the body, then runs the request. */
void conn_read_body(struct http_conn *conn);
/* RUNNING: streams what has arrived into the sink fd. */
void conn_sink_pump(struct http_conn *conn);
/* Closes the sink fd and forgets it. */
void conn_sink_stop(struct http_conn *conn);

/* connection-upgrade.c: UPGRADED: what has arrived goes to raw_ops->input. */
void conn_raw_input(struct http_conn *conn);
/* UPGRADED: the output fell low, raw_ops->drained. */
void conn_raw_drained(struct http_conn *conn);
/* At the free: raw_ops->closed, once. */
void conn_raw_closed(struct http_conn *conn);

/* connection-drain.c: after an answer that left the body unread, drains a streamed body to its
 * end while the answer waits, or else drops what comes for a moment. */
void conn_linger(struct http_conn *conn);
/* CLOSING: drops what has arrived of that body. */
void conn_drop_unread(struct http_conn *conn);
/* The end of that; an answer that waited goes. */
void conn_stop_lingering(struct http_conn *conn);

#endif
