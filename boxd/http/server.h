/* server.h: boxd's HTTP server on its's listeners (the unix socket, vsock). */
#ifndef BOXD_SERVER_H
#define BOXD_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

struct event_base;

/* Binds the listeners and starts serving the API on the loop. A missing
 * vsock device is a warning, not a failure. */
bool server_start(struct event_base *base, const struct boxd_config *config, char *error,
		  size_t error_size);
/* Closes listeners and connections and removes the socket file. */
void server_stop(void);

#endif
