/* ctl-files.c: boxctl get PATH [-o FILE] (also `files get`): a file as it
 * is, a folder as the tar.gz boxd makes of it (X-Archive: 1), streamed to
 * FILE or stdout. The other `files` subcommands are ctl-files-ops.c's. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl-files.h"
#include "ctl.h"
#include "io.h"
#include "xalloc.h"

struct get_sink {
	struct client_response *response;
	int fd;
	char *error; /* the body of an error answer, kept to print */
	size_t error_length;
	bool write_failed;
};

static bool on_get_data(void *arg, const char *data, size_t length)
{
	struct get_sink *sink = arg;
	if (sink->response->status < 200 || sink->response->status > 299) {
		if (sink->error_length + length > 64 * 1024)
			return false;
		sink->error = xrealloc(sink->error, sink->error_length + length + 1);
		memcpy(sink->error + sink->error_length, data, length);
		sink->error_length += length;
		sink->error[sink->error_length] = '\0';
		return true;
	}
	if (!io_write_all(sink->fd, data, length)) {
		sink->write_failed = true;
		return false;
	}
	return true;
}

static void print_error_body(const char *body, int status)
{
	cJSON *json = body ? cJSON_Parse(body) : NULL;
	const char *message = cJSON_GetStringValue(
		cJSON_GetObjectItem(cJSON_GetObjectItem(json, "error"), "message"));
	if (message)
		fprintf(stderr, "boxctl: %s\n", message);
	else
		fprintf(stderr, "boxctl: boxd answered HTTP %d\n", status);
	cJSON_Delete(json);
}

int ctl_files_get(struct ctl *ctl, int argc, char **argv)
{
	const char *path = NULL, *output = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
			output = argv[++i];
		else if (!path && argv[i][0] != '-')
			path = argv[i];
		else
			return ctl_usage_error("get", "takes PATH [-o FILE]");
	}
	if (!path)
		return ctl_usage_error("get", "needs the PATH of a file or folder in the box");
	struct client *client = ctl_client(ctl);
	if (!client)
		return CTL_API_ERROR;
	char *partial = output ? xasprintf("%s.part", output) : NULL;
	int fd = partial ? open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : 1;
	if (fd < 0) {
		fprintf(stderr, "boxctl: cannot write %s: %s\n", partial, strerror(errno));
		free(partial);
		return CTL_API_ERROR;
	}
	char *encoded = ctl_url_encode(path);
	char *target = xasprintf("/v1/files?path=%s", encoded);
	free(encoded);
	struct client_response response = {0};
	struct get_sink sink = {.response = &response, .fd = fd};
	char error[512];
	bool sent = client_request_stream(client, "GET", target, NULL, NULL, 0, NULL, on_get_data,
					  &sink, &response, error, sizeof error);
	free(target);
	int status = CTL_OK;
	if (!sent || sink.write_failed) {
		fprintf(stderr, "boxctl: %s\n", sink.write_failed ? strerror(errno) : error);
		status = CTL_API_ERROR;
	} else if (response.status < 200 || response.status > 299) {
		print_error_body(sink.error, response.status);
		status = CTL_API_ERROR;
	}
	if (partial) {
		close(fd);
		if (status == CTL_OK && rename(partial, output) < 0) {
			fprintf(stderr, "boxctl: cannot write %s: %s\n", output, strerror(errno));
			status = CTL_API_ERROR;
		}
		if (status != CTL_OK)
			unlink(partial);
		free(partial);
	}
	if (status == CTL_OK && output && !ctl->json) {
		const char *archive = client_response_header(&response, "X-Archive");
		fprintf(stderr, "boxctl: wrote %s%s\n", output,
			archive && strcmp(archive, "1") == 0 ? " (a tar.gz of the folder)" : "");
	}
	free(sink.error);
	client_response_free(&response);
	return status;
}

const struct ctl_command ctl_files_commands[] = {
	{"get", "  get PATH [-o FILE]          a file, or a folder as tar.gz, from the box",
	 ctl_files_get},
	{"files",
	 "  files stat PATH [--hash] | files ls [PATH] [--depth N] | files mkdir [-p] PATH\n"
	 "  files mv [-f] FROM TO | files rm [-r] PATH | files chmod MODE PATH\n"
	 "  files put LOCAL PATH [--mode 0644] | files get PATH [-o FILE]\n"
	 "                              one file or folder at a time, in the box",
	 ctl_files_run},
	{0},
};
