/* probe.h: is the database server itself answering yet? A published port
 * accepts a TCP connection as soon as Docker's proxy listens, long before
 * the server does, and the official images run a first server during
 * their set-up that takes no TCP connections at all. So each probe speaks
 * the first step of the server's own protocol and calls it ready only when
 * the server answers as it does to a client it will serve. */
#ifndef PSBX_PROBE_H
#define PSBX_PROBE_H

#include <stdbool.h>
#include <stddef.h>

/* PostgreSQL: a StartupMessage for `user`/`database`; ready when the
 * server asks for authentication ('R'). An 'E' (the database system is
 * starting up, or shutting down) is not ready; its message is kept. */
bool probe_postgres(const char *host_port, const char *user, const char *database, char *detail,
		    size_t size);

/* MySQL and MariaDB: the server speaks first; ready on its handshake
 * (protocol 10), not on an error packet (whose text is kept). */
bool probe_mysql(const char *host_port, char *detail, size_t size);

#endif
