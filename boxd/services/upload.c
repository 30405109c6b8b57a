#include "upload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive-client.h"
#include "config.h"
#include "steps.h"
#include "xalloc.h"

static const struct boxd_config *settings; /* given at upload_init */

void upload_init(const struct boxd_config *config)
{
	settings = config;
}

struct upload {
	char *dest;
	upload_done_fn done;
	void *done_arg;
};

/* The worker's error code, as the outcome boxd answers with. */
static enum upload_outcome outcome_of(const char *code)
{
	if (code && strcmp(code, "bad_request") == 0)
		return UPLOAD_REFUSED;
	if (code && strcmp(code, "disk_full") == 0)
		return UPLOAD_DISK_FULL;
	return UPLOAD_FAILED;
}

static void extracted(const struct archive_call_result *result, void *arg)
{
	struct upload *upload = arg;
	const char *shown = upload->dest[0] ? upload->dest : "the work dir";
	cJSON *json = cJSON_ParseWithLength(result->output, result->output_length);
	cJSON *error = cJSON_GetObjectItem(json, "error");
	struct upload_result answer = {.outcome = UPLOAD_FAILED};
	char why[1024];
	if (json && cJSON_IsTrue(cJSON_GetObjectItem(json, "ok"))) {
		double files = cJSON_GetNumberValue(cJSON_GetObjectItem(json, "files"));
		double bytes = cJSON_GetNumberValue(cJSON_GetObjectItem(json, "bytes"));
		cJSON_AddStringToObject(json, "dest", upload->dest[0] ? upload->dest : ".");
		steps_add("upload", "%.0f files (%.0f bytes) into %s", files, bytes, shown);
		answer = (struct upload_result){.outcome = UPLOAD_DONE, .summary = json};
		json = NULL;
	} else if (error) {
		const char *code = cJSON_GetStringValue(cJSON_GetObjectItem(error, "code"));
		const char *message = cJSON_GetStringValue(cJSON_GetObjectItem(error, "message"));
		steps_add("upload", "refused into %s: %s", shown, message ? message : "?");
		answer.outcome = outcome_of(code);
		answer.message = message ? message : "the archive worker failed";
		if (answer.outcome == UPLOAD_DISK_FULL) {
			/* The worker names the entry; the caller needs the place too. */
			snprintf(why, sizeof why, "the disk is full under %s%s%s: %s (free space there and "
				 "retry)", settings->work_dir, upload->dest[0] ? "/" : "", upload->dest,
				 answer.message);
			answer.message = why;
		}
	} else {
		snprintf(why, sizeof why, "the archive worker stopped without a result (status %d%s%s)",
			 result->status, result->errors[0] ? ": " : "", result->errors);
		answer.message = why;
	}
	upload->done(&answer, upload->done_arg);
	cJSON_Delete(json);
	free(upload->dest);
	free(upload);
}

struct archive_call *upload_extract(const char *dest, const void *archive, size_t length,
				    int input_fd, upload_done_fn done, void *arg)
{
	struct upload *upload = xcalloc(1, sizeof *upload);
	upload->dest = xstrdup(dest);
	upload->done = done;
	upload->done_arg = arg;
	char *cache = xasprintf("%s/hash-cache", settings->run_dir);
	const char *args[] = {"extract", settings->work_dir, dest[0] ? dest : ".",
			      "--user", settings->user ? settings->user : "root",
			      "--cache", cache, NULL};
	struct archive_call *call = archive_call(args, archive, length, input_fd, 4096, extracted,
						 upload);
	free(cache);
	return call;
}
