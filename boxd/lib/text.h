/* text.h: small text helpers more than one module needs. */
#ifndef BOXD_TEXT_H
#define BOXD_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Formats a sentence into `error` and returns false, so a failing function
 * can end with `return text_fail(error, size, "...", ...);`. This is the
 * one way a function that fails at once says why; snprintf into the error
 * buffer only when cleanup must come between the sentence and the return. */
bool text_fail(char *error, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The value of a hexadecimal digit (either case), or -1. */
int text_hex_value(char c);

/* A name a command's environment can carry: [A-Za-z_][A-Za-z0-9_]*. */
bool text_is_env_name(const char *name);

/* True when JSON text holds a string with an escaped NUL (\u0000). cJSON
 * keeps strings NUL-terminated, so such a string would reach its user cut
 * short at the NUL: a command or an env value silently shortened. The
 * contract makes it a bad_request instead. */
bool text_json_has_nul(const char *json, size_t length);

#endif
