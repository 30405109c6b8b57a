/* screen-spawn.h: starting boxd-screen, and what its exit status means.
 * For screen-client.c, which speaks to the worker; nothing here reads or
 * writes a frame. */
#ifndef BOXD_SCREEN_SPAWN_H
#define BOXD_SCREEN_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "failure.h"

/* True when the display's server is there to connect to now: its local
 * socket exists, or the display is reached over the network (not checked). */
bool screen_display_present(const char *display);

/* Starts boxd-screen for `display` (--idle-exit `idle_sec`, --warm when
 * `warm`) with one end of a new socketpair as its fd 3 (SCREEN_WORKER_FD),
 * the only descriptor it inherits besides stdin, stdout and stderr. Returns
 * boxd's end (non-blocking, close-on-exec) with the worker's pid, or -1
 * with a sentence in `error`. */
int screen_spawn(const char *display, int idle_sec, bool warm, pid_t *pid, char *error,
		 size_t error_size);

/* What the worker's exit `status` (as waitpid gives it; -1: unknown, it did
 * not exit in time) means for the calls it leaves unanswered: a failure,
 * and a sentence in `message`. */
enum failure screen_exit_meaning(int status, char *message, size_t message_size);

#endif
