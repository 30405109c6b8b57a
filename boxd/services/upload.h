/* upload.h: a caller's tar.gz extracted into WORK/<dest>, where both
 * POST /v1/sync/upload and a resumable upload's finish end: the archive
 * worker's call (archive-client.h), the step it leaves in the steps list,
 * and the result worded for the caller. Loop thread only. */
#ifndef BOXD_UPLOAD_H
#define BOXD_UPLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "failure.h"

struct archive_call;
struct boxd_config;

/* Messages name `config`'s work dir (kept, not copied). */
void upload_init(const struct boxd_config *config);

struct upload_result {
	bool ok;
	uint64_t files;   /* ok: regular files, symbolic links and hard links */
	uint64_t bytes;   /* ok: regular file content written */
	const char *dest; /* ok: relative to the work dir, "." for the work dir */
	/* !ok: bad_request (the archive or dest refused), disk_full (the
	 * sentence names the place and the entry) or internal; and why. */
	enum failure failure;
	const char *message;
};
/* The result is valid during the call only. */
typedef void (*upload_done_fn)(void *arg, const struct upload_result *result);

/* Extracts the tar.gz read from `input_fd` (taken over: a pipe fed with a
 * request's body, or a file) into WORK/<dest>, `dest` relative to the work
 * dir ("" for the work dir itself), and records the step. done() runs once,
 * on the loop. Returns the worker's call (for archive_call_cancel), or NULL
 * when done() has run already. */
struct archive_call *upload_extract(const char *dest, int input_fd, upload_done_fn done, void *arg);

#endif
