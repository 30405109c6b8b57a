/* route-match.h: matching a request path against a route pattern. Pure. */
#ifndef BOXD_ROUTE_MATCH_H
#define BOXD_ROUTE_MATCH_H

#include <stdbool.h>
#include <stddef.h>

#define ROUTE_MAX_PARAMS 4

/* Matches the raw (still percent-encoded) `path` against `pattern`, where
 * each "{}" stands for one non-empty segment. On a match fills `params` with
 * the decoded segments (caller frees each) and returns true. A segment that
 * decodes to something holding '/' or a NUL byte never matches. */
bool route_match(const char *pattern, const char *path, char *params[ROUTE_MAX_PARAMS]);

/* Percent-decodes `text` (length `length`); returns NULL when it holds a bad
 * escape. `*decoded_length` gets the length (the result may hold NULs). */
char *route_percent_decode(const char *text, size_t length, size_t *decoded_length);

#endif
