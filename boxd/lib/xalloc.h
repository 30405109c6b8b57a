/* xalloc.h: allocators that abort on out-of-memory, so callers never check.
 * boxd cannot do anything useful once malloc fails; systemd restarts it and
 * the commands (owned by their shims) carry on. */
#ifndef BOXD_XALLOC_H
#define BOXD_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *text);
char *xstrndup(const char *text, size_t length);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
