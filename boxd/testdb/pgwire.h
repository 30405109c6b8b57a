/* pgwire.h: the little of PostgreSQL's protocol (version 3.0) that up,
 * reset and gotest need: is the server answering, log in, run statements. It spares a `docker exec`
 * of psql per database: a process in the container, seconds on a slow
 * box, where a connection takes milliseconds. */
#ifndef PSBX_PGWIRE_H
#define PSBX_PGWIRE_H

#include <stdbool.h>
#include <stddef.h>

/* Is the server itself answering? A StartupMessage for `user`/`database`:
 * ready when the server asks for authentication ('R'). An 'E' ("the
 * database system is starting up", or shutting down) is not ready; its
 * message goes to `detail`, as does why nothing answered. A published
 * port accepts a connection as soon as Docker's proxy listens, and the
 * official image runs a first server during its set-up that takes no TCP
 * connection at all: neither counts. */
bool pgwire_answers(const char *host_port, const char *user, const char *database, char *detail,
		    size_t size);

/* Logs in to `database` on 127.0.0.1:PORT as `user` with `password`
 * (trust, cleartext, md5 or SCRAM-SHA-256, as the server asks) and runs
 * each of `statements` (NULL-terminated) as a query of its own, stopping
 * at the first error. False with the server's message, or why it could
 * not be asked, in `error`. */
bool pgwire_run(const char *host_port, const char *user, const char *password, const char *database,
		const char *const statements[], char *error, size_t size);

#endif
