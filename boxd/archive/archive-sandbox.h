/* archive-sandbox.h: how boxd-archive confines itself before it reads any
 * untrusted byte: trimmed capabilities, no new privileges, and a seccomp
 * allowlist that kills the process on anything else. Fails closed. */
#ifndef BOXD_ARCHIVE_SANDBOX_H
#define BOXD_ARCHIVE_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>

enum archive_sandbox_profile {
	ARCHIVE_SANDBOX_EXTRACT, /* write files below an already open directory */
	ARCHIVE_SANDBOX_CREATE,  /* read files below an already open directory */
	ARCHIVE_SANDBOX_DIFF,    /* read files, on threads; keep the hash cache */
};

/* False with a sentence in `why` when any part could not be applied; the
 * caller must then exit without doing its job. */
bool archive_sandbox_enter(enum archive_sandbox_profile profile, char *why, size_t why_size);

#endif
