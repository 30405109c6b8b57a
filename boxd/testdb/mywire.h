/* mywire.h: the little of MySQL's client/server protocol (4.1 and later)
 * that up, reset and gotest need: is the server answering, log in with mysql_native_password (MariaDB's
 * default, and any MySQL account made with it) and run statements. An
 * account on another method (MySQL 8.0's caching_sha2_password, whose
 * first login wants TLS or the server's RSA key) is left to the image's own
 * client in the container. */
#ifndef PSBX_MYWIRE_H
#define PSBX_MYWIRE_H

#include <stdbool.h>
#include <stddef.h>

enum mywire_outcome {
	MYWIRE_DONE,        /* every statement ran */
	MYWIRE_FAILED,      /* the server refused, or the connection failed */
	MYWIRE_OTHER_METHOD /* the account logs in another way: not tried */
};

/* Is the server itself answering? It speaks first: ready on its handshake
 * (protocol 10), not on an error packet ("Too many connections", a host
 * not allowed), whose text goes to `detail`, as does why nothing came. */
bool mywire_answers(const char *host_port, char *detail, size_t size);

/* Logs in to 127.0.0.1:PORT as `user`/`password` and runs each of
 * `statements` (NULL-terminated), stopping at the first error. On
 * MYWIRE_FAILED, `error` has the server's message or why it could not be
 * asked; on MYWIRE_OTHER_METHOD, the method's name. */
enum mywire_outcome mywire_run(const char *host_port, const char *user, const char *password,
			       const char *const statements[], char *error, size_t size);

#endif
