/* api-archive.h: routing help for the routes whose service runs
 * boxd-archive (sync diff and upload, a resumable upload's finish): the
 * dest parameter read, the request's streamed body handed over as the
 * worker's input, the worker's call cancelled when the client leaves, and
 * an upload's result answered. Nothing here speaks the worker's protocol
 * (archive-client.h does); nothing outlives the request. */
#ifndef BOXD_API_ARCHIVE_H
#define BOXD_API_ARCHIVE_H

#include "upload.h"

struct api_request;
struct archive_call;

/* The dest query parameter checked and made relative to the work dir (""
 * for the work dir itself), or NULL after answering 400. Caller frees. */
char *api_archive_dest(struct api_request *req);

/* A pipe the request's body (an API_STREAM_BODY route's) flows into at the
 * pace the worker reads it: its reading end, for a service to take over as
 * the worker's stdin, or -1 after answering. A client that leaves mid-body
 * cancels the call api_archive_watch() is given. */
int api_archive_body(struct api_request *req);

/* `call` is cancelled if the client leaves before the answer. NULL (the
 * call's done() has answered already, and the request may be gone) is
 * ignored. */
void api_archive_watch(struct api_request *req, struct archive_call *call);
/* The call's done() has come: forget the call, before answering. */
void api_archive_ended(struct api_request *req);

/* An upload_done_fn whose arg is the request: answers the contract's
 * {"ok","files","bytes","dest"}, or the failure. */
void api_archive_upload_answered(void *arg, const struct upload_result *result);

#endif
