/* router.h: what a route module sees of an HTTP request.
 *
 * Each area of the API is one file (api-health.c, api-exec.c, ...) exporting a
 * table of `struct api_route`, registered once in routes.c. The router matches
 * the method and path, checks the peer, applies the lock rule and the
 * X-Request-Id memory, parses nothing the handler did not ask for, and hands
 * the handler a `struct api_request`. Handlers never see a socket.
 *
 * A handler answers exactly once, with api_reply_json(), api_reply_failure(),
 * api_reply_bytes() or a stream (api_stream_*). It may answer later, from
 * another event callback: the request stays valid until it is answered, even
 * if the client has gone (api_client_gone() tells; answering it then only
 * frees it). All functions here run on the event loop thread only. */
#ifndef BOXD_ROUTER_H
#define BOXD_ROUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "failure.h"
#include "routes.h"

struct api_request;
struct event_base;

/* ---- reading the request ---- */
/* "GET", "POST", ... as sent. */
const char *api_method(struct api_request *req);
/* The i-th {} segment of the pattern, percent-decoded (NULL past the last). */
const char *api_param(struct api_request *req, int index);
/* A query parameter, percent-decoded, or NULL when absent. */
const char *api_query(struct api_request *req, const char *name);
/* True when that parameter's value held a NUL (%00), which api_query()'s
 * C string cuts short: a path with one is a bad_request, never a shorter
 * path. */
bool api_query_has_nul(struct api_request *req, const char *name);
const char *api_header(struct api_request *req, const char *name);
/* The request body (never NULL; `length` may be 0). */
const void *api_body(struct api_request *req, size_t *length);
/* API_STREAM_BODY routes: streams the body into `fd` (a pipe's writing end
 * or a file, taken over: closed once the body is in or can no longer come),
 * reading the socket only as fast as `fd` takes it (100 Continue goes out
 * first if the client waits for it). done() (optional) runs once, later:
 * `complete` when the whole body was written, else `error` says why:
 * ECONNRESET when the client left (then done() runs instead of the
 * api_on_client_gone callback), EPIPE when the reader of a pipe did, EPROTO
 * for malformed chunks. A handler may answer before the body is in (an
 * error): done() does not run, the rest is read and dropped before the
 * answer goes out (within bounds, connection-drain.c), and the connection
 * closes. */
void api_body_to_fd(struct api_request *req, int fd,
		    void (*done)(struct api_request *req, bool complete, int error));
/* The body parsed as a JSON object. On a malformed or non-object body it
 * replies 400 `bad_request` itself and returns NULL; the handler just returns.
 * An empty body gives an empty object. Owned by the request. */
cJSON *api_body_json(struct api_request *req);
/* Frees the body and its JSON now, for a handler that has copied what it
 * needs and answers much later (a foreground command, at its end): a
 * 16 MiB body then does not stay for the command's hour. */
void api_body_release(struct api_request *req);
/* Per-request data for handlers that answer later; `release` runs when the
 * request ends (answered or abandoned). */
void api_set_data(struct api_request *req, void *data, void (*release)(void *data));
void *api_data(struct api_request *req);
/* Names what this call made (a command id) in its X-Request-Id memory,
 * before it answers. No-op without an id. */
void api_request_bind(struct api_request *req, const char *resource);
/* When this is a repeat of an X-Request-Id whose first call a restart of
 * boxd cut after it bound a resource: that resource, for the handler to
 * attach to instead of making it again. Else NULL. */
const char *api_request_resumed(struct api_request *req);
/* True once the client has disconnected; an answer is then discarded. */
bool api_client_gone(struct api_request *req);
/* Called once if the client disconnects before the answer is complete. */
void api_on_client_gone(struct api_request *req, void (*gone)(struct api_request *req));

/* The loop the server runs on, for handlers that answer later. */
struct event_base *api_base(struct api_request *req);

/* What the router asks of the rest of boxd (main.c wires it; each may be
 * NULL): nothing here knows a service. */
enum router_use {
	ROUTER_USE_CALL,      /* every route's run but API_NOT_ACTIVITY ones */
	ROUTER_USE_STREAM,    /* a streamed answer */
	ROUTER_USE_UPLOAD,    /* an API_UPLOAD route's run */
	ROUTER_USE_LIVE_VIEW, /* an API_LIVE route's streamed answer */
};

struct router_hooks {
	/* A use of the box begins or ends (activity): each begin is ended once,
	 * when the request ends (answered, or its client gone). */
	void (*use)(enum router_use use, bool begins);
	/* True while the box is frozen (routes but API_SERVED_FROZEN: 409). */
	bool (*frozen)(void);
	/* True while a person has the screen (API_REFUSED_WHILE_LOCKED). */
	bool (*locked)(void);
	/* True when the local process `pid` is one of boxd's commands
	 * (API_FOR_CONTROL routes refuse it). */
	bool (*is_command)(pid_t pid);
};

/* The routes served: tables of `struct api_route`, each ending with an
 * all-zero entry, the list with NULL (kept, not copied); and the hooks. */
void router_setup(const struct api_route *const *tables, const struct router_hooks *hooks);

/* ---- answering ---- */
/* Takes ownership of `body`. */
void api_reply_json(struct api_request *req, int status, cJSON *body);
/* What the X-Request-Id memory keeps of this call's coming answer, and
 * gives every repeat, instead of the answer itself: for an answer that must
 * be handed out once (the lock's token). Takes ownership of `kept`. */
void api_keep_instead(struct api_request *req, cJSON *kept);
/* {"error":{"code":..,"message":..}} with the failure's status and code
 * (failure.h) and the message formatted and masked. */
void api_reply_failure(struct api_request *req, enum failure failure, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void api_reply_bytes(struct api_request *req, int status, const char *content_type,
		     const void *data, size_t length);
/* Adds a response header before the answer starts. */
void api_add_header(struct api_request *req, const char *name, const char *value);

/* Streaming (chunked) answers: start, write any number of times, end.
 * `drained` (optional) runs whenever the socket has taken what was written,
 * so a producer can wait for it instead of buffering a whole file. */
void api_stream_start(struct api_request *req, int status, const char *content_type,
		      void (*drained)(struct api_request *req));
void api_stream_write(struct api_request *req, const void *data, size_t length);
/* Bytes written but not yet taken by the socket. */
size_t api_stream_pending(struct api_request *req);
void api_stream_end(struct api_request *req);

/* The common error answers, so every module words them alike. */
void api_reply_bad_request(struct api_request *req, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void api_reply_not_found(struct api_request *req, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Writing what the caller sent failed with `error` (an errno): 507
 * disk_full when the disk is full (ENOSPC, EDQUOT: the caller can free
 * space and retry), else 500 internal. The message names the path; ": "
 * and the errno's text are added. */
void api_reply_write_failed(struct api_request *req, int error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* True for the errnos of a full disk (or a full quota). */
bool api_disk_full(int error);

#endif
