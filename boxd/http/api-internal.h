/* api-internal.h: the router's face towards the server (server.c). */
#ifndef BOXD_API_INTERNAL_H
#define BOXD_API_INTERNAL_H

struct boxd_config;
struct event_base;
struct evhttp;

/* Routes every request of `http` through the router. Handlers find `base`
 * and `config` (kept, not copied) through api_base() and api_config(). */
void api_attach(struct evhttp *http, struct event_base *base, const struct boxd_config *config);

#endif
