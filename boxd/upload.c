#include "upload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/api.h"
#include "archive-client.h"
#include "config.h"
#include "steps.h"
#include "work-path.h"
#include "xalloc.h"

static const struct boxd_config *settings; /* given at upload_init */

void upload_init(const struct boxd_config *config)
{
	settings = config;
}

struct upload {
	char *dest;
	void (*done)(void *arg, bool ok);
	void *done_arg;
};

char *upload_dest(struct api_request *req)
{
	const char *dest = api_query(req, "dest");
	if (!dest) {
		api_reply_bad_request(req, "the dest query parameter is missing (a folder under the work dir)");
		return NULL;
	}
	const char *why = NULL;
	char *relative = work_path_relative(settings->work_dir, dest, &why);
	if (!relative)
		api_reply_bad_request(req, "dest %s", why);
	return relative;
}

static void answer(struct api_request *req, const struct archive_call_result *result, void *arg)
{
	struct upload *upload = arg;
	const char *shown = upload->dest[0] ? upload->dest : "the work dir";
	cJSON *json = cJSON_ParseWithLength(result->output, result->output_length);
	cJSON *error = cJSON_GetObjectItem(json, "error");
	bool ok = json && cJSON_IsTrue(cJSON_GetObjectItem(json, "ok"));
	if (ok) {
		double files = cJSON_GetNumberValue(cJSON_GetObjectItem(json, "files"));
		double bytes = cJSON_GetNumberValue(cJSON_GetObjectItem(json, "bytes"));
		cJSON_AddStringToObject(json, "dest", upload->dest[0] ? upload->dest : ".");
		steps_add("upload", "%.0f files (%.0f bytes) into %s", files, bytes, shown);
		api_reply_json(req, 200, json);
		json = NULL;
	} else if (error) {
		const char *code = cJSON_GetStringValue(cJSON_GetObjectItem(error, "code"));
		const char *message = cJSON_GetStringValue(cJSON_GetObjectItem(error, "message"));
		bool refused = code && strcmp(code, "bad_request") == 0;
		steps_add("upload", "refused into %s: %s", shown, message ? message : "?");
		api_reply_error(req, refused ? 400 : 500, refused ? "bad_request" : "internal", "%s",
				message ? message : "the archive worker failed");
	} else {
		api_reply_error(req, 500, "internal",
				"the archive worker stopped without a result (status %d%s%s)",
				result->status, result->errors[0] ? ": " : "", result->errors);
	}
	cJSON_Delete(json);
	if (upload->done)
		upload->done(upload->done_arg, ok);
	free(upload->dest);
	free(upload);
}

void upload_extract(struct api_request *req, const char *dest, int input_fd,
		    void (*done)(void *arg, bool ok), void *arg)
{
	struct upload *upload = xcalloc(1, sizeof *upload);
	upload->dest = xstrdup(dest);
	upload->done = done;
	upload->done_arg = arg;
	char *cache = xasprintf("%s/hash-cache", settings->run_dir);
	const char *args[] = {"extract", settings->work_dir, dest[0] ? dest : ".",
			      "--user", settings->user ? settings->user : "root",
			      "--cache", cache, NULL};
	archive_call(req, args, input_fd, 4096, answer, upload);
	free(cache);
}
