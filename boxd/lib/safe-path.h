/* safe-path.h: is a relative path (bytes from outside) confined to its base?
 *
 * Manifests and tar entries name files relative to a destination. A name is
 * safe when, taken literally, it cannot leave that destination: not empty, not
 * absolute, no NUL byte, no "." or ".." component, no empty component. Where
 * symbolic links inside the destination lead is a separate question, answered
 * by the kernel at open time (openat2 with RESOLVE_BENEATH). */
#ifndef BOXD_SAFE_PATH_H
#define BOXD_SAFE_PATH_H

#include <stdbool.h>
#include <stddef.h>

/* NULL when safe, else a short reason ("is absolute", "contains ..."). */
const char *safe_path_check(const char *path, size_t length);

/* Tar names come as "./a/b" or "a/b/": strips leading "./" pieces and
 * trailing slashes in place and returns the new length. "." alone gives 0. */
size_t safe_path_trim(char *path, size_t length);

#endif
