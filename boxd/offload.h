/* offload.h: run a blocking piece of work on its own thread and come back
 * to the event loop when it is done, so the loop never hashes or writes
 * big buffers itself. Call from the loop thread only. */
#ifndef BOXD_OFFLOAD_H
#define BOXD_OFFLOAD_H

#include <stdbool.h>

/* Runs work(arg) on a new thread, then done(arg) on the loop. False (and
 * nothing run) when no thread could be started. */
bool offload_run(void (*work)(void *arg), void (*done)(void *arg), void *arg);

#endif
