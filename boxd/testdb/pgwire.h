/* pgwire.h: the little of PostgreSQL's protocol (version 3.0) that reset
 * and gotest need: log in and run statements. It spares a `docker exec`
 * of psql per database: a process in the container, seconds on a slow
 * box, where a connection takes milliseconds. */
#ifndef PSBX_PGWIRE_H
#define PSBX_PGWIRE_H

#include <stdbool.h>
#include <stddef.h>

/* Logs in to `database` on 127.0.0.1:PORT as `user` with `password`
 * (trust, cleartext, md5 or SCRAM-SHA-256, as the server asks) and runs
 * each of `statements` (NULL-terminated) as a query of its own, stopping
 * at the first error. False with the server's message, or why it could
 * not be asked, in `error`. */
bool pgwire_run(const char *host_port, const char *user, const char *password, const char *database,
		const char *const statements[], char *error, size_t size);

#endif
