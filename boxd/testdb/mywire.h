/* mywire.h: the little of MySQL's client/server protocol (4.1 and later)
 * that reset and gotest need: log in with mysql_native_password (MariaDB's
 * default, and any MySQL account made with it) and run statements. An
 * account on another method (MySQL 8.0's caching_sha2_password, whose
 * first login wants TLS or the server's RSA key) is left to the image's own
 * client in the container. */
#ifndef PSBX_MYWIRE_H
#define PSBX_MYWIRE_H

#include <stddef.h>

enum mywire_outcome {
	MYWIRE_DONE,        /* every statement ran */
	MYWIRE_FAILED,      /* the server refused, or the connection failed */
	MYWIRE_OTHER_METHOD /* the account logs in another way: not tried */
};

/* Logs in to 127.0.0.1:PORT as `user`/`password` and runs each of
 * `statements` (NULL-terminated), stopping at the first error. On
 * MYWIRE_FAILED, `error` has the server's message or why it could not be
 * asked; on MYWIRE_OTHER_METHOD, the method's name. */
enum mywire_outcome mywire_run(const char *host_port, const char *user, const char *password,
			       const char *const statements[], char *error, size_t size);

#endif
