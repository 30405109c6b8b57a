/* http-errors.h: the contract's error body, {"error":{"code","message"}},
 * for the answers the connection gives before any route (and the router's). */
#ifndef BOXD_HTTP_ERRORS_H
#define BOXD_HTTP_ERRORS_H

/* The contract's code for a status the connection answers by itself. */
const char *http_error_code(int status);
/* The JSON text (caller frees). */
char *http_error_json(const char *code, const char *message);

#endif
