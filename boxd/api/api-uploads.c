/* api-uploads.c: resumable uploads (API.md, "Sync and files"), for archives
 * of any size: POST /v1/uploads?dest=DIR, PUT /v1/uploads/{id} with
 * Upload-Offset, HEAD /v1/uploads/{id}, POST /v1/uploads/{id}/finish, and
 * DELETE /v1/uploads/{id} to give one up. The store and the finish are
 * resumable-uploads.h's; a piece streams from the socket straight into its
 * `.part` file (API_STREAM_BODY), never held in memory. */
#include <stdio.h>
#include <stdlib.h>

#include "api-archive.h"
#include "resumable-uploads.h"
#include "router.h"

static void reply_refused(struct api_request *req, const struct resumable_failure *why)
{
	if (why->offset >= 0) {
		char header[32];
		snprintf(header, sizeof header, "%lld", why->offset);
		api_add_header(req, "Upload-Offset", header);
	}
	api_reply_failure(req, why->failure, "%s", why->message);
}

/* The {id} segment of an upload that is there, or NULL after answering. */
static const char *upload_id(struct api_request *req)
{
	const char *id = api_param(req, 0);
	char why[96];
	if (!resumable_known(id, why, sizeof why)) {
		api_reply_not_found(req, "%s: start one with POST /v1/uploads?dest=DIR", why);
		return NULL;
	}
	return id;
}

static void handle_create(struct api_request *req)
{
	char *dest = api_archive_dest(req);
	if (!dest)
		return;
	char id[RESUMABLE_ID_LENGTH + 1];
	struct resumable_failure why;
	if (resumable_create(dest, id, &why)) {
		cJSON *answer = cJSON_CreateObject();
		cJSON_AddStringToObject(answer, "uploadId", id);
		api_reply_json(req, 200, answer);
	} else {
		reply_refused(req, &why);
	}
	free(dest);
}

static void piece_release(void *data)
{
	resumable_piece_close(data);
}

static void piece_written(struct api_request *req, bool complete, int error)
{
	long long offset;
	struct resumable_failure why;
	if (!resumable_piece_end(api_data(req), complete, error, &offset, &why)) {
		reply_refused(req, &why);
		return;
	}
	cJSON *answer = cJSON_CreateObject();
	cJSON_AddNumberToObject(answer, "offset", (double)offset);
	api_reply_json(req, 200, answer);
}

static void handle_put(struct api_request *req)
{
	const char *id = upload_id(req);
	if (!id)
		return;
	const char *offset_text = api_header(req, "Upload-Offset");
	char *end = NULL;
	long long offset = offset_text ? strtoll(offset_text, &end, 10) : -1;
	if (!offset_text || end == offset_text || *end || offset < 0) {
		api_reply_bad_request(
			req, "the Upload-Offset header must give the byte offset of this piece");
		return;
	}
	int fd;
	struct resumable_failure why;
	struct resumable_piece *piece = resumable_piece_start(id, offset, &fd, &why);
	if (!piece) {
		reply_refused(req, &why);
		return;
	}
	api_set_data(req, piece, piece_release);
	api_body_to_fd(req, fd, piece_written);
}

static void handle_head(struct api_request *req)
{
	const char *id = upload_id(req);
	if (!id)
		return;
	long long offset;
	if (!resumable_offset(id, &offset)) {
		api_reply_not_found(req, "no upload %s", id);
		return;
	}
	char header[32];
	snprintf(header, sizeof header, "%lld", offset);
	api_add_header(req, "Upload-Offset", header);
	api_add_header(req, "Cache-Control", "no-store");
	api_reply_bytes(req, 200, "application/octet-stream", "", 0);
}

static void handle_finish(struct api_request *req)
{
	const char *id = upload_id(req);
	if (id)
		api_archive_watch(req, resumable_finish(id, api_archive_upload_answered, req));
}

static void handle_delete(struct api_request *req)
{
	const char *id = upload_id(req);
	if (!id)
		return;
	struct resumable_failure why;
	if (!resumable_delete(id, &why)) {
		reply_refused(req, &why);
		return;
	}
	cJSON *answer = cJSON_CreateObject();
	cJSON_AddBoolToObject(answer, "ok", true);
	api_reply_json(req, 200, answer);
}

const struct api_route api_uploads_routes[] = {
	{"POST", "/v1/uploads", API_REFUSED_WHILE_LOCKED | API_IDEMPOTENT, 0, handle_create},
	{"PUT", "/v1/uploads/{}",
	 API_REFUSED_WHILE_LOCKED | API_IDEMPOTENT | API_STREAM_BODY | API_UPLOAD, 0, handle_put},
	{"HEAD", "/v1/uploads/{}", 0, 0, handle_head},
	{"POST", "/v1/uploads/{}/finish", API_REFUSED_WHILE_LOCKED | API_IDEMPOTENT | API_UPLOAD, 0,
	 handle_finish},
	{"DELETE", "/v1/uploads/{}", API_IDEMPOTENT, 0, handle_delete},
	{0},
};
