/* utf8.h: making command output valid UTF-8 for JSON answers.
 *
 * Output is bytes; the API promises text. Invalid bytes become U+FFFD and
 * cutting a stream never splits a character. */
#ifndef BOXD_UTF8_H
#define BOXD_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* A NUL-terminated copy of `data` where every invalid byte (and every NUL) is
 * replaced by U+FFFD. `*out_length` (optional) gets the result's length. */
char *utf8_sanitize(const char *data, size_t length, size_t *out_length);

/* True when `data` is wholly valid UTF-8 (RFC 3629, as above; NUL is a
 * character here): what a WebSocket text message must be. */
bool utf8_valid(const char *data, size_t length);

/* The longest prefix of `data` (at most `length` bytes) that does not end
 * inside a multi-byte character. */
size_t utf8_prefix_length(const char *data, size_t length);

/* How many leading bytes to skip so `data` does not start inside a
 * character (continuation bytes, at most 3). */
size_t utf8_skip_partial(const char *data, size_t length);

/* The length of the longest prefix of `data` that is valid UTF-8 without a
 * NUL (what a JSON string can carry as it is); `length` when all of it is.
 * A character cut short by the end counts as invalid. */
size_t utf8_valid_prefix(const char *data, size_t length);

#endif
