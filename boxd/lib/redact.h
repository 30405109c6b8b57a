/* redact.h: the one place text passes through before boxd returns or writes
 * it (error messages, steps, its own log lines, proc commands).
 *
 * The secret masker installs itself as the filter once secrets are known;
 * until then text passes unchanged. Thread-safe to call; the filter itself
 * must be safe to call from any thread. */
#ifndef BOXD_REDACT_H
#define BOXD_REDACT_H

#include <stdbool.h>

/* Returns a new string (caller frees): `text` with every secret masked. */
typedef char *(*redact_filter_fn)(const char *text);

void redact_set_filter(redact_filter_fn filter);
char *redact_text(const char *text);
/* Whether a filter is installed (callers may skip work when none is). */
bool redact_active(void);

#endif
