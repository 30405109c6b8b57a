/* upload.h: extracting an uploaded tar.gz into WORK/<dest> through the
 * sandboxed boxd-archive worker (POST /v1/sync/upload, resumable uploads). */
#ifndef BOXD_UPLOAD_H
#define BOXD_UPLOAD_H

#include <stddef.h>

#include <cjson/cJSON.h>

struct archive_call;
struct boxd_config;

/* Extractions use the work dir, run dir and user of `config` (kept). */
void upload_init(const struct boxd_config *config);

enum upload_outcome {
	UPLOAD_DONE,     /* `summary` holds {"ok":true,"files","bytes","dest"} */
	UPLOAD_REFUSED,  /* the archive itself is wrong (a path escaping dest...) */
	UPLOAD_DISK_FULL, /* no space left where it was being written */
	UPLOAD_FAILED,   /* the worker failed or stopped without a result */
};
struct upload_result {
	enum upload_outcome outcome;
	cJSON *summary;      /* UPLOAD_DONE only; done() takes it over */
	const char *message; /* otherwise: why, as a sentence */
};
typedef void (*upload_done_fn)(struct upload_result *result, void *arg);

/* Extracts `archive` (`length` bytes, kept until done() runs) or, when
 * `input_fd` >= 0, the file open on it (taken over) into WORK/<dest>, `dest`
 * relative to the work dir ("" for the work dir itself), and records the
 * step. done() runs once, on the loop. Returns the worker call (for
 * archive_call_cancel), or NULL when done() has run already. */
struct archive_call *upload_extract(const char *dest, const void *archive, size_t length,
				    int input_fd, upload_done_fn done, void *arg);

#endif
