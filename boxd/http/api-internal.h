/* api-internal.h: the router's face towards the server (server.c). */
#ifndef BOXD_API_INTERNAL_H
#define BOXD_API_INTERNAL_H

struct evhttp;

/* Routes every request of `http` through the router. */
void api_attach(struct evhttp *http);

#endif
