/* offload.h: blocking work on a thread of its own, its end told on the
 * loop. For what may take seconds (a sync, a walk of /proc) and must not
 * stall every other caller. */
#ifndef BOXD_OFFLOAD_H
#define BOXD_OFFLOAD_H

#include <stdbool.h>

struct event_base;

/* Runs work(arg) on a new thread (which takes no signal), then done(arg)
 * on `base`'s loop. False with errno when no thread could start: nothing
 * ran, the caller decides. */
bool offload_run(struct event_base *base, void (*work)(void *arg), void (*done)(void *arg),
		 void *arg);

#endif
