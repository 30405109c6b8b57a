/* api-archive.h: what the API areas that run boxd-archive share (sync,
 * uploads): the request's body as the worker's input, the worker killed if
 * the client leaves, and the upload answers worded once. */
#ifndef BOXD_API_ARCHIVE_H
#define BOXD_API_ARCHIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "archive-client.h"

struct api_request;

typedef void (*api_archive_done_fn)(struct api_request *req,
				    const struct archive_call_result *result, void *arg);

/* Runs boxd-archive with `args` on the request's body, streamed in as it
 * arrives (input_fd < 0; the route has API_STREAM_BODY) or on `input_fd`
 * (taken over); done() runs once and answers the request. */
void api_archive_call(struct api_request *req, const char *const args[], int input_fd,
		      size_t output_limit, api_archive_done_fn done, void *arg);

/* The dest query parameter checked and made relative to the work dir, or
 * NULL after answering 400. Caller frees. */
char *api_upload_dest(struct api_request *req);

/* Extracts the request's body, streamed (input_fd < 0), or the file open on `input_fd`
 * (a finished resumable upload; taken over) into `dest` and answers with the
 * contract's {"ok","dest","files","bytes"} or the error. `after`, if given,
 * runs after the answer with `arg` and whether it succeeded. */
void api_upload_extract(struct api_request *req, const char *dest, int input_fd,
			void (*after)(void *arg, bool ok), void *arg);

#endif
