/* api-alive.c: a stream's alive events (api-alive.h). */
#include "api-alive.h"

#include <stdlib.h>

#include <event2/event.h>

#include "clock.h"
#include "xalloc.h"

struct api_alive {
	struct event *timer;
	int64_t started_ms, armed_ms;
	void (*send)(void *arg, cJSON *event);
	void *arg;
};

void api_alive_rearm(struct api_alive *alive)
{
	alive->armed_ms = clock_monotonic_ms();
	struct timeval period = {API_ALIVE_SEC, 0};
	event_add(alive->timer, &period);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct api_alive *alive = arg;
	/* libevent times on a coarse clock that can run a few ms behind ours:
	 * an alive event comes after a full API_ALIVE_SEC of silence, never
	 * before, so wait out the difference. */
	int64_t left = alive->armed_ms + API_ALIVE_SEC * 1000 - clock_monotonic_ms();
	if (left > 0) {
		struct timeval rest = {0, (suseconds_t)left * 1000};
		event_add(alive->timer, &rest);
		return;
	}
	cJSON *event = cJSON_CreateObject();
	cJSON_AddStringToObject(event, "type", "alive");
	cJSON_AddNumberToObject(event, "elapsedMs",
				(double)(clock_monotonic_ms() - alive->started_ms));
	api_alive_rearm(alive);
	alive->send(alive->arg, event);
}

struct api_alive *api_alive_new(struct event_base *base, void (*send)(void *arg, cJSON *event),
				void *arg)
{
	struct api_alive *alive = xcalloc(1, sizeof *alive);
	alive->timer = evtimer_new(base, on_timer, alive);
	alive->started_ms = clock_monotonic_ms();
	alive->send = send;
	alive->arg = arg;
	api_alive_rearm(alive);
	return alive;
}

void api_alive_free(struct api_alive *alive)
{
	if (!alive)
		return;
	event_free(alive->timer);
	free(alive);
}
