/* connection.h: one HTTP/1.1 connection, on a libevent bufferevent.
 *
 * A connection reads one request at a time: its head (at most 64 KiB, whole
 * within a deadline), then its body, and hands it to the router (router.c);
 * pipelined requests wait in the socket's input until the answer before
 * them is out, so answers go in order. Between requests it waits at most
 * --idle-timeout. Errors of its own (malformed 400, head too large 431, head
 * too slow 408, Transfer-Encoding other than chunked 501, connection cap 503)
 * go out as the contract's JSON before it closes.
 *
 * Bodies reach the router buffered (at most the route's limit, 413 from the
 * head alone past it) or, for API_STREAM_BODY routes, as a stream into an fd
 * the handler gives (http_conn_body_to_fd): the socket is read only as fast
 * as that fd takes the bytes. A streamed body answered before its end is
 * read and dropped to its end (bounded) before that answer goes out.
 *
 * A request may instead end HTTP on its connection (http_conn_upgrade: 101
 * Switching Protocols, for WebSocket): from then on its bytes both ways are
 * the new protocol's, with no idle or head deadline and no pipelining; only
 * the write deadline stays, so a peer that stops reading is still dropped. */
#ifndef BOXD_CONNECTION_H
#define BOXD_CONNECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "failure.h"

struct api_request;
struct event_base;
struct evbuffer;
struct http_conn;
struct http_head;

/* The head's deadline, unless --idle-timeout is shorter. */
#define HTTP_HEAD_TIMEOUT_SEC 10

/* What a connection hands its requests to: the router (router-internal.h;
 * server.c wires it), which the connection does not include. */
struct http_conn_router {
	/* A head arrived (taken over): the request that will carry it. */
	struct api_request *(*begin)(struct http_conn *conn, struct http_head *head);
	size_t (*body_limit)(const struct api_request *req);
	bool (*streams_body)(const struct api_request *req);
	/* 413: the body (`declared` bytes, 0 when chunked) is over the limit. */
	void (*too_large)(struct api_request *req, unsigned long long declared);
	/* The shared rules and the handler; `body` taken over (NULL: none, or
	 * streamed). */
	void (*run)(struct api_request *req, struct evbuffer *body);
	/* The connection went before the answer. */
	void (*lost)(struct api_request *req);
	/* An error of the connection's own about the request, as its answer. */
	void (*fail)(struct api_request *req, enum failure failure, const char *message);
};

void http_conn_setup(struct event_base *base, int idle_timeout_sec,
		     const struct http_conn_router *router);
/* Serves an accepted, checked peer (fd non-blocking); past the connection
 * cap it answers 503 and closes the fd instead. */
void http_conn_accept(int fd);
/* Closes every connection (boxd stops): requests in flight see their client gone. */
void http_conn_close_all(void);
/* The pid of the process that connected (SO_PEERCRED, as it was at its
 * connect): 0 when the peer is not a local process (vsock), -1 when it
 * cannot be told. */
pid_t http_conn_peer_pid(const struct http_conn *conn);

/* ---- for the router ---- */

/* A whole answer. `headers` are extra header lines, each ending CRLF
 * (Content-Type among them). For HEAD the body is not sent. */
void http_conn_respond(struct http_conn *conn, int status, const char *headers, const void *body,
		       size_t length);
/* A chunked answer: start, write, end. `drained(arg)` runs whenever the
 * socket has taken most of what was written. */
void http_conn_stream_start(struct http_conn *conn, int status, const char *headers,
			    void (*drained)(void *arg), void *arg);
void http_conn_stream_write(struct http_conn *conn, const void *data, size_t length);
void http_conn_stream_end(struct http_conn *conn);
size_t http_conn_pending(struct http_conn *conn);

/* What an upgraded connection hands its bytes and its end to. */
struct http_raw_ops {
	/* Bytes arrived: the callee takes (drains) what it can use from
	 * `input` and leaves the rest there for the next call. */
	void (*input)(void *arg, struct evbuffer *input);
	/* The socket has taken most of what was written. */
	void (*drained)(void *arg);
	/* The connection is freed (either side closed, an error, boxd stops):
	 * once, last; the connection must not be used again. */
	void (*closed)(void *arg);
};

/* Ends the request (answered: the caller frees it) with 101 Switching
 * Protocols and `headers` (header lines, each ending CRLF), and hands the
 * connection to `ops`. Not for a route that streams its body. */
void http_conn_upgrade(struct http_conn *conn, const char *headers, const struct http_raw_ops *ops,
		       void *arg);
/* Upgraded: queues bytes for the peer (http_conn_pending tells how many wait). */
void http_conn_raw_write(struct http_conn *conn, const void *data, size_t length);
/* Upgraded: the connection closes once what was written has gone out;
 * ops->input is not called again. With `linger`, what the peer still sends
 * is read and dropped meanwhile, until its EOF or for a moment (as after an
 * early answer), so a peer still writing reads the last words instead of a
 * reset; without, the peer is known to have finished. ops->closed runs at
 * the free: possibly inside this call, when nothing waits and no callback
 * of the connection is running. */
void http_conn_raw_close(struct http_conn *conn, bool linger);

/* Streams the rest of the request's body into `fd` (a pipe or a file,
 * taken over: closed once the body is written or can no longer be), sending
 * 100 Continue first if the client waits for it. done(arg, complete, error)
 * runs once, later: complete when the whole body was written; else `error`
 * (an errno) says why (EPIPE: the fd refused a write; EPROTO: malformed
 * chunks). It does not run when the answer comes first or the connection
 * is lost (the router hears that through api_request_lost). */
void http_conn_body_to_fd(struct http_conn *conn, int fd,
			  void (*done)(void *arg, bool complete, int error), void *arg);

#endif
