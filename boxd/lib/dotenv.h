/* dotenv.h: parsing of dotenv text (`PUT /v1/env/{service}` bodies).
 *
 * Accepted, line by line: blank lines and `#` comments; `NAME=value` with an
 * optional `export ` prefix and blanks around `=`; NAME is [A-Za-z_] then
 * [A-Za-z0-9_.-]. Values are unquoted (trailing blanks and a ` #` comment
 * dropped), 'single-quoted' (literal, may span lines) or "double-quoted"
 * (\n \r \t \\ \" \$ \` escapes, may span lines; another backslash stays).
 * No variable expansion. A name given twice keeps its last value. Lines may
 * end in \n or \r\n. */
#ifndef BOXD_DOTENV_H
#define BOXD_DOTENV_H

#include <stdbool.h>
#include <stddef.h>

struct dotenv_entry {
	char *name;
	char *value; /* NUL-terminated, never holds NUL */
};

struct dotenv {
	struct dotenv_entry *entries;
	size_t count;
};

/* Parses `len` bytes. On malformed text returns false with a sentence naming
 * the line in `error` and leaves `env` empty. */
bool dotenv_parse(const char *text, size_t len, struct dotenv *env, char *error, size_t error_size);
/* Frees the entries, wiping the values. */
void dotenv_free(struct dotenv *env);

/* True for a setting that holds a secret: a name containing KEY, SECRET,
 * TOKEN, PASSWORD, PASS, PWD, CREDENTIAL, PRIVATE or DSN (any case), or a
 * value that is a URL carrying a password. */
bool dotenv_is_secret(const char *name, const char *value);
/* The password of a URL value (`scheme://user:password@host...`): sets
 * `*start` and `*len` and returns true, or false when there is none. */
bool dotenv_url_password(const char *value, size_t *start, size_t *len);

#endif
