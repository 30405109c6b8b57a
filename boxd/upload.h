/* upload.h: extracting an uploaded tar.gz into WORK/<dest> through the
 * sandboxed boxd-archive worker, answering the request with the contract's
 * {"ok","dest","files","bytes"} or the worker's error. Loop thread only. */
#ifndef BOXD_UPLOAD_H
#define BOXD_UPLOAD_H

#include <stdbool.h>

struct api_request;
struct boxd_config;

/* Extractions use the work dir, run dir and user of `config` (kept). */
void upload_init(const struct boxd_config *config);

/* Extracts the request's own body (input_fd < 0) or the file open on
 * `input_fd` (a finished resumable upload; taken over and closed). `done`,
 * if given, runs after the answer with `arg` (cleanup of spooled files). */
void upload_extract(struct api_request *req, const char *dest, int input_fd,
		    void (*done)(void *arg, bool ok), void *arg);

/* The dest query parameter checked and made relative to the work dir, or
 * NULL after answering 400. Caller frees. */
char *upload_dest(struct api_request *req);

#endif
