/* http-errors.h: the contract's errors in HTTP: each failure's status (the
 * one table, failure.h says why), and the error body,
 * {"error":{"code","message"}}, of every error answer. */
#ifndef BOXD_HTTP_ERRORS_H
#define BOXD_HTTP_ERRORS_H

#include "failure.h"

/* The HTTP status of a failure. */
int http_status_of(enum failure failure);
/* The failure a status stands for (the parser's, the connection's own):
 * the first in the table with that status. */
enum failure http_failure_of_status(int status);
/* The JSON text (caller frees). */
char *http_error_json(const char *code, const char *message);

#endif
