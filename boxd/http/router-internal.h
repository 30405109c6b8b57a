/* router-internal.h: the router's face towards the connections (connection.c),
 * the server (server.c) and the protocols a request can upgrade to
 * (ws-conn.c). */
#ifndef BOXD_ROUTER_INTERNAL_H
#define BOXD_ROUTER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "failure.h"

struct api_request;
struct event_base;
struct evbuffer;
struct http_conn;
struct http_head;
struct http_raw_ops;

/* The loop handlers find through api_base(). */
void router_serve(struct event_base *base);

/* A request's head arrived on `conn` (the head is taken over): its route is
 * looked up. The request then runs (api_request_run), is answered by the
 * connection (an error through api_reply_failure), or is lost. */
struct api_request *api_request_begin(struct http_conn *conn, struct http_head *head);
/* The largest body its route takes, and whether it takes it as a stream. */
size_t api_request_body_limit(const struct api_request *req);
bool api_request_streams_body(const struct api_request *req);
/* Answers 413: the body (`declared` bytes, 0 when chunked) is over the
 * route's limit. */
void api_request_too_large(struct api_request *req, unsigned long long declared);
/* Applies the shared rules and calls the handler. `body` (taken over) is
 * the whole body, or NULL when there is none or the route streams it. */
void api_request_run(struct api_request *req, struct evbuffer *body);
/* The connection went before the answer: the handler is told (gone), or a
 * request that never ran is freed. */
void api_request_lost(struct api_request *req);
/* An error of the connection's own about the request (malformed chunks, a
 * body that stopped), answered as the request's answer. */
void api_request_fail(struct api_request *req, enum failure failure, const char *message);

/* Ends the request as answered, with 101 Switching Protocols and `headers`
 * (lines ending CRLF), and hands its connection to `ops` (connection.h):
 * the request is freed (its uses of the box end with it; a session that
 * counts as one begins its own). Returns the connection, or NULL when the
 * client had gone already (the request is freed all the same). */
struct http_conn *api_upgrade(struct api_request *req, const char *headers,
			      const struct http_raw_ops *ops, void *arg);

#endif
