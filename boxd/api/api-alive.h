/* api-alive.h: the {"type":"alive","elapsedMs":N} event an NDJSON answer
 * sends after every API_ALIVE_SEC without another event (API.md, "Exec"),
 * so a proxy between boxd and its caller keeps a quiet stream open. Used by
 * the streaming exec and the output route alike. */
#ifndef BOXD_API_ALIVE_H
#define BOXD_API_ALIVE_H

#include <cjson/cJSON.h>

#define API_ALIVE_SEC 20

struct event_base;
struct api_alive;

/* Starts counting now: `send(arg, event)` gets each alive event (taking
 * it) after API_ALIVE_SEC of silence. */
struct api_alive *api_alive_new(struct event_base *base, void (*send)(void *arg, cJSON *event),
				void *arg);
/* Something else was sent: the silence starts again. */
void api_alive_rearm(struct api_alive *alive);
void api_alive_free(struct api_alive *alive);

#endif
