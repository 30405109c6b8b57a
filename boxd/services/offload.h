/* offload.h: blocking work on a thread of its own, its end told on the
 * loop. For what may take seconds (a sync, a walk of /proc) and must not
 * stall every other caller. */
#ifndef BOXD_OFFLOAD_H
#define BOXD_OFFLOAD_H

#include <stdbool.h>

struct event_base;

/* Runs work(arg) on a new thread (which takes no signal), then done(arg)
 * on `base`'s loop. When no thread can start, both run at once on the
 * loop, logged as a warning naming `what` ("freeze: the sync"): slow is
 * better than not at all. */
void offload_run(struct event_base *base, const char *what, void (*work)(void *arg),
		 void (*done)(void *arg), void *arg);

#endif
