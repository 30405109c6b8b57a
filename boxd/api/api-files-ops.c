/* api-files-ops.c: files one at a time (API.md, "Sync and files"):
 * GET /v1/files/stat, GET /v1/files/list, PUT /v1/files, DELETE /v1/files,
 * POST /v1/files/mkdir, /move, /chmod. The operations are files.h's; a
 * file's SHA-256 is the archive worker's (archive-client.h), so that
 * hashing a big file never holds the loop. A PUT's body streams into its
 * temporary file at the pace the disk takes it (API_STREAM_BODY). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive-client.h"
#include "files.h"
#include "router.h"
#include "text.h"
#include "xalloc.h"

static void reply_error(struct api_request *req, const struct files_error *error)
{
	api_reply_failure(req, error->failure, "%s", error->message);
}

/* The path query parameter, or NULL after answering. */
static const char *query_path(struct api_request *req)
{
	const char *path = api_query(req, "path");
	if (!path || !*path) {
		api_reply_bad_request(req,
				      "the path query parameter is missing: name a file or "
				      "folder under the work dir (absolute, or relative to it)");
		return NULL;
	}
	if (api_query_has_nul(req, "path")) {
		api_reply_bad_request(req, "the path holds a NUL byte (%%00), which no file name "
					   "can hold");
		return NULL;
	}
	return path;
}

static bool query_flag(struct api_request *req, const char *name)
{
	const char *value = api_query(req, name);
	return value && (strcmp(value, "1") == 0 || strcmp(value, "true") == 0);
}

/* ---- stat ---- */

struct stat_call {
	cJSON *answer;
	struct archive_call *hashing;
};

static void stat_call_free(void *data)
{
	struct stat_call *call = data;
	cJSON_Delete(call->answer);
	free(call);
}

static void on_stat_hashed(void *arg, const struct archive_sha256_answer *answer)
{
	struct api_request *req = arg;
	struct stat_call *call = api_data(req);
	call->hashing = NULL;
	if (!answer->ok) {
		api_reply_failure(req, answer->failure, "%s", answer->message);
		return;
	}
	cJSON_AddStringToObject(call->answer, "sha256", answer->hex);
	cJSON *json = call->answer;
	call->answer = NULL;
	api_reply_json(req, 200, json);
}

static void on_stat_gone(struct api_request *req)
{
	struct stat_call *call = api_data(req);
	if (call->hashing)
		archive_call_cancel(call->hashing);
}

static void handle_stat(struct api_request *req)
{
	const char *path = query_path(req);
	if (!path)
		return;
	struct files_error error;
	cJSON *json = files_stat(path, &error);
	if (!json) {
		reply_error(req, &error);
		return;
	}
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(json, "type"));
	if (!query_flag(req, "hash") || strcmp(type, "file") != 0) {
		api_reply_json(req, 200, json);
		return;
	}
	int fd = files_open_regular(path, &error);
	if (fd < 0) {
		cJSON_Delete(json);
		reply_error(req, &error);
		return;
	}
	struct stat_call *call = xcalloc(1, sizeof *call);
	call->answer = json;
	api_set_data(req, call, stat_call_free);
	api_on_client_gone(req, on_stat_gone);
	call->hashing = archive_client_sha256(fd, on_stat_hashed, req);
}

/* ---- list ---- */

static void handle_list(struct api_request *req)
{
	const char *path = query_path(req);
	if (!path)
		return;
	const char *depth_text = api_query(req, "depth");
	char *end = NULL;
	long depth = depth_text ? strtol(depth_text, &end, 10) : 1;
	if (depth_text && (end == depth_text || *end || depth < 1 || depth > 8)) {
		api_reply_bad_request(req, "depth must be a number from 1 to 8, not %s",
				      depth_text);
		return;
	}
	struct files_error error;
	cJSON *json = files_list(path, (int)depth, &error);
	if (json)
		api_reply_json(req, 200, json);
	else
		reply_error(req, &error);
}

/* ---- PUT ---- */

struct put_call {
	struct files_put *put;
	char expected[65]; /* the X-Content-SHA256 given, lower case; "" for none */
};

static void put_call_free(void *data)
{
	struct put_call *call = data;
	files_put_free(call->put);
	free(call);
}

static void put_commit(struct api_request *req, struct put_call *call, const char *sha256)
{
	struct files_error error;
	cJSON *json = files_put_commit(call->put, &error);
	if (!json) {
		reply_error(req, &error);
		return;
	}
	if (sha256)
		cJSON_AddStringToObject(json, "sha256", sha256);
	api_reply_json(req, 200, json);
}

static void on_put_hashed(void *arg, const struct archive_sha256_answer *answer)
{
	struct api_request *req = arg;
	struct put_call *call = api_data(req);
	if (!answer->ok)
		api_reply_failure(req, answer->failure, "%s", answer->message);
	else if (strcmp(answer->hex, call->expected) != 0)
		api_reply_bad_request(req,
				      "the body's SHA-256 is %s, not the %s that X-Content-SHA256 "
				      "gives: nothing was written",
				      answer->hex, call->expected);
	else
		put_commit(req, call, answer->hex);
}

/* The bytes are on disk (or not): the hash, when one was given, then the
 * rename. */
static void on_put_durable(void *arg, const struct files_error *error)
{
	struct api_request *req = arg;
	struct put_call *call = api_data(req);
	if (error) {
		reply_error(req, error); /* a client that left hears nothing */
		return;
	}
	if (!call->expected[0]) {
		put_commit(req, call, NULL);
		return;
	}
	int reader = files_put_reader(call->put);
	if (reader < 0) {
		api_reply_failure(req, FAILURE_INTERNAL, "cannot read the written file back");
		return;
	}
	archive_client_sha256(reader, on_put_hashed, req);
}

static void on_put_body(struct api_request *req, bool complete, int written_error)
{
	struct put_call *call = api_data(req);
	if (!complete && (written_error == EPROTO)) {
		api_reply_bad_request(req, "the body was malformed: nothing was written");
		return;
	}
	if (!complete && !written_error)
		written_error = EIO; /* an end short of the body is never a whole file */
	files_put_written(call->put, complete ? 0 : written_error, on_put_durable, req);
}

/* X-Content-SHA256, when given, as 64 lower-case hex digits into
 * `expected`; false after answering when malformed. */
static bool expected_sha256(struct api_request *req, char expected[65])
{
	const char *header = api_header(req, "X-Content-SHA256");
	expected[0] = '\0';
	if (!header)
		return true;
	size_t length = strlen(header);
	bool ok = length == 64;
	for (size_t i = 0; ok && i < length; i++) {
		ok = text_hex_value(header[i]) >= 0;
		expected[i] = (char)tolower((unsigned char)header[i]);
	}
	expected[ok ? 64 : 0] = '\0';
	if (!ok)
		api_reply_bad_request(req, "X-Content-SHA256 must be 64 hex digits (the body's "
					   "SHA-256)");
	return ok;
}

/* The mode parameter: -1 when absent, else 0..07777; -2 after answering. */
static int query_mode(struct api_request *req)
{
	const char *text = api_query(req, "mode");
	mode_t mode;
	if (!text)
		return -1;
	if (!files_parse_mode(text, &mode)) {
		api_reply_bad_request(req,
				      "mode must be octal digits from 0 to 7777 (as \"0644\"), "
				      "not %s",
				      text);
		return -2;
	}
	return (int)mode;
}

static void handle_put(struct api_request *req)
{
	const char *path = query_path(req);
	int mode = path ? query_mode(req) : -2;
	struct put_call *call = xcalloc(1, sizeof *call);
	if (mode == -2 || !expected_sha256(req, call->expected)) {
		free(call);
		return;
	}
	struct files_error error;
	int body_fd;
	call->put = files_put_begin(path, mode, &body_fd, &error);
	if (!call->put) {
		free(call);
		reply_error(req, &error);
		return;
	}
	api_set_data(req, call, put_call_free);
	api_body_to_fd(req, body_fd, on_put_body);
}

/* ---- DELETE ---- */

static void on_removed(void *arg, cJSON *answer, const struct files_error *error)
{
	struct api_request *req = arg;
	if (answer)
		api_reply_json(req, 200, answer);
	else
		reply_error(req, error);
}

static void handle_delete(struct api_request *req)
{
	const char *path = query_path(req);
	if (!path)
		return;
	struct files_error error;
	if (!files_remove(path, query_flag(req, "recursive"), on_removed, req, &error))
		reply_error(req, &error);
}

/* ---- mkdir, move, chmod ---- */

/* The body's JSON, or NULL after answering (a string with a NUL is
 * refused: a name cut short at it would be another name). */
static cJSON *body_json(struct api_request *req)
{
	size_t length;
	const char *body = api_body(req, &length);
	if (text_json_has_nul(body, length)) {
		api_reply_bad_request(req, "a string of the body holds a NUL (\\u0000), which no "
					   "file name can hold");
		return NULL;
	}
	return api_body_json(req);
}

/* A string field, or NULL after answering. */
static const char *body_string(struct api_request *req, const cJSON *json, const char *name)
{
	const char *value = cJSON_GetStringValue(cJSON_GetObjectItem(json, name));
	if (!value || !*value)
		api_reply_bad_request(req, "the body needs \"%s\": a path under the work dir",
				      name);
	return value && *value ? value : NULL;
}

/* An optional boolean field: 1 true, 0 false or absent, -1 after answering. */
static int body_bool(struct api_request *req, const cJSON *json, const char *name)
{
	const cJSON *item = cJSON_GetObjectItem(json, name);
	if (!item || cJSON_IsNull(item))
		return 0;
	if (!cJSON_IsBool(item)) {
		api_reply_bad_request(req, "\"%s\" must be true or false", name);
		return -1;
	}
	return cJSON_IsTrue(item);
}

/* An optional mode field (an octal string): `absent` when missing, -1
 * after answering. */
static int body_mode(struct api_request *req, const cJSON *json, int absent)
{
	const cJSON *item = cJSON_GetObjectItem(json, "mode");
	mode_t mode;
	if (!item)
		return absent;
	if (!cJSON_IsString(item) || !files_parse_mode(item->valuestring, &mode)) {
		api_reply_bad_request(req, "\"mode\" must be a string of octal digits from 0 to "
					   "7777, as \"0644\" (JSON has no octal numbers)");
		return -1;
	}
	return (int)mode;
}

static void reply_result(struct api_request *req, cJSON *json, const struct files_error *error)
{
	if (json)
		api_reply_json(req, 200, json);
	else
		reply_error(req, error);
}

static void handle_mkdir(struct api_request *req)
{
	cJSON *json = body_json(req);
	const char *path = json ? body_string(req, json, "path") : NULL;
	int parents = path ? body_bool(req, json, "parents") : -1;
	int mode = parents >= 0 ? body_mode(req, json, 0777) : -1;
	if (mode < 0)
		return;
	struct files_error error;
	reply_result(req, files_mkdir(path, parents, (mode_t)mode, &error), &error);
}

static void handle_move(struct api_request *req)
{
	cJSON *json = body_json(req);
	const char *from = json ? body_string(req, json, "from") : NULL;
	const char *to = from ? body_string(req, json, "to") : NULL;
	int overwrite = to ? body_bool(req, json, "overwrite") : -1;
	if (overwrite < 0)
		return;
	struct files_error error;
	reply_result(req, files_move(from, to, overwrite, &error), &error);
}

static void handle_chmod(struct api_request *req)
{
	cJSON *json = body_json(req);
	const char *path = json ? body_string(req, json, "path") : NULL;
	int mode = path ? body_mode(req, json, -2) : -1;
	if (mode == -2)
		api_reply_bad_request(req, "the body needs \"mode\": octal digits as \"0644\"");
	if (mode < 0)
		return;
	struct files_error error;
	reply_result(req, files_chmod(path, (mode_t)mode, &error), &error);
}

#define WRITES (API_REFUSED_WHILE_LOCKED | API_IDEMPOTENT)

const struct api_route api_files_ops_routes[] = {
	{"GET", "/v1/files/stat", 0, 0, handle_stat},
	{"GET", "/v1/files/list", 0, 0, handle_list},
	{"PUT", "/v1/files", WRITES | API_STREAM_BODY | API_UPLOAD, 0, handle_put},
	{"DELETE", "/v1/files", WRITES, 0, handle_delete},
	{"POST", "/v1/files/mkdir", WRITES, 0, handle_mkdir},
	{"POST", "/v1/files/move", WRITES, 0, handle_move},
	{"POST", "/v1/files/chmod", WRITES, 0, handle_chmod},
	{0},
};
