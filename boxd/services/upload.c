/* upload.c: an upload's extraction, from the worker's answer to the step
 * and the caller's result. */
#include "upload.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

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

static void extracted(void *arg, const struct archive_extract_answer *answer)
{
	struct upload *upload = arg;
	const char *shown = upload->dest[0] ? upload->dest : "the work dir";
	struct upload_result result = {
		.ok = answer->ok,
		.files = answer->files,
		.bytes = answer->bytes,
		.dest = upload->dest[0] ? upload->dest : ".",
		.failure = answer->failure,
		.message = answer->message,
	};
	char why[1024];
	if (answer->ok) {
		steps_add("upload", "%" PRIu64 " files (%" PRIu64 " bytes) into %s", answer->files,
			  answer->bytes, shown);
	} else if (answer->answered) {
		/* A worker that was killed or crashed refused nothing: no step. */
		steps_add("upload", "refused into %s: %s", shown, answer->message);
		if (answer->failure == FAILURE_DISK_FULL) {
			/* The worker names the entry; the caller needs the place too. */
			snprintf(why, sizeof why,
				 "the disk is full under %s%s%s: %s (free space there and "
				 "retry)",
				 settings->work_dir, upload->dest[0] ? "/" : "", upload->dest,
				 answer->message);
			result.message = why;
		}
	}
	upload->done(upload->done_arg, &result);
	free(upload->dest);
	free(upload);
}

struct archive_call *upload_extract(const char *dest, int input_fd, upload_done_fn done, void *arg)
{
	struct upload *upload = xcalloc(1, sizeof *upload);
	upload->dest = xstrdup(dest);
	upload->done = done;
	upload->done_arg = arg;
	return archive_client_extract(dest, input_fd, extracted, upload);
}
