/* http-errors.h: the errors evhttp answers by itself (a body past the
 * limit, a request that is not HTTP) go out with the contract's JSON body
 * instead of libevent's HTML page (http-errors.c). */
#ifndef BOXD_HTTP_ERRORS_H
#define BOXD_HTTP_ERRORS_H

struct evhttp;
struct evhttp_request;

/* Watches every new connection's output (evhttp_set_bevcb). */
void http_errors_attach(struct evhttp *http);

/* The router answers `req`: its connection's output is left alone until
 * the response is complete. */
void http_errors_router_answers(struct evhttp_request *req);

#endif
