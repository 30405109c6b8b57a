/* credhelper.h: what git-credential-boxd and docker-credential-boxd share:
 * one GET to boxd over its unix socket ($BOXD_SOCKET, else
 * /run/boxd/boxd.sock), the answer's body printed as it is. The helpers
 * hold no credential themselves: boxd answers at each use
 * (docs/credentials.md). */
#ifndef BOXD_CREDHELPER_H
#define BOXD_CREDHELPER_H

#include <stdbool.h>
#include <stddef.h>

/* `text` percent-encoded for a query value (caller frees). */
char *credhelper_query_value(const char *text);

/* GETs `path` from boxd. Returns the status (200: the body was written to
 * stdout whole; 404: nothing written) or -1 when boxd could not be asked,
 * with a line on stderr naming `program` either way but 200 and 404. */
int credhelper_get(const char *program, const char *path);

/* Reads stdin whole (at most 64 KiB) as a NUL-terminated string (caller
 * frees), or NULL. */
char *credhelper_read_stdin(void);

#endif
