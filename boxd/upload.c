#include "upload.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "api.h"
#include "archive-run.h"
#include "boxd.h"
#include "log.h"
#include "steps.h"
#include "sync.h"
#include "xalloc.h"

#define RESULT_LIMIT 4096

struct upload {
	struct api_request *req;
	char *dest;
	struct archive_process process;
	struct event *input_event, *output_event, *exit_event;
	const char *body; /* the request's body, while feeding it */
	size_t body_length, body_sent;
	char result[RESULT_LIMIT + 1];
	size_t result_length;
	char errors[512];
	bool output_done, exited, gone;
	int exit_status;
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
	char *relative = sync_dest_relative(boxd_config()->work_dir, dest, &why);
	if (!relative)
		api_reply_bad_request(req, "dest %s", why);
	return relative;
}

static void close_input(struct upload *upload)
{
	if (upload->input_event)
		event_free(upload->input_event);
	upload->input_event = NULL;
	if (upload->process.input_fd >= 0)
		close(upload->process.input_fd);
	upload->process.input_fd = -1;
}

static void answer(struct upload *upload)
{
	struct api_request *req = upload->req;
	cJSON *json = cJSON_ParseWithLength(upload->result, upload->result_length);
	cJSON *error = cJSON_GetObjectItem(json, "error");
	bool ok = json && cJSON_IsTrue(cJSON_GetObjectItem(json, "ok"));
	if (ok) {
		double files = cJSON_GetNumberValue(cJSON_GetObjectItem(json, "files"));
		double bytes = cJSON_GetNumberValue(cJSON_GetObjectItem(json, "bytes"));
		cJSON_AddStringToObject(json, "dest", upload->dest[0] ? upload->dest : ".");
		steps_add("upload", "%.0f files (%.0f bytes) into %s", files, bytes,
			  upload->dest[0] ? upload->dest : "the work dir");
		api_reply_json(req, 200, json);
		json = NULL;
	} else if (error) {
		const char *code = cJSON_GetStringValue(cJSON_GetObjectItem(error, "code"));
		const char *message = cJSON_GetStringValue(cJSON_GetObjectItem(error, "message"));
		bool refused = code && strcmp(code, "bad_request") == 0;
		steps_add("upload", "refused into %s: %s", upload->dest[0] ? upload->dest : "the work dir",
			  message ? message : "?");
		api_reply_error(req, refused ? 400 : 500, refused ? "bad_request" : "internal", "%s",
				message ? message : "the archive worker failed");
	} else {
		char *newline = strchr(upload->errors, '\n');
		if (newline)
			*newline = '\0';
		api_reply_error(req, 500, "internal",
				"the archive worker stopped without a result (status %d%s%s)",
				upload->exit_status, upload->errors[0] ? ": " : "", upload->errors);
	}
	cJSON_Delete(json);
	if (upload->done)
		upload->done(upload->done_arg, ok);
}

static void finish_if_done(struct upload *upload)
{
	if (!upload->output_done || !upload->exited)
		return;
	close_input(upload);
	(void)!read(upload->process.error_fd, upload->errors, sizeof upload->errors - 1);
	close(upload->process.error_fd);
	close(upload->process.output_fd);
	event_free(upload->output_event);
	event_free(upload->exit_event);
	answer(upload); /* also when gone: that only frees the request */
	free(upload->dest);
	free(upload);
}

static void on_input(evutil_socket_t fd, short events, void *arg)
{
	struct upload *upload = arg;
	while (upload->body_sent < upload->body_length) {
		ssize_t wrote = write(fd, upload->body + upload->body_sent,
				      upload->body_length - upload->body_sent);
		if (wrote < 0) {
			if (errno == EAGAIN)
				return;
			break; /* EPIPE: the worker stopped reading; its result says why */
		}
		upload->body_sent += (size_t)wrote;
	}
	close_input(upload);
}

static void on_output(evutil_socket_t fd, short events, void *arg)
{
	struct upload *upload = arg;
	char buffer[4096];
	ssize_t got = read(fd, buffer, sizeof buffer);
	if (got < 0 && errno == EAGAIN)
		return;
	if (got > 0) {
		size_t room = RESULT_LIMIT - upload->result_length;
		size_t take = (size_t)got < room ? (size_t)got : room;
		memcpy(upload->result + upload->result_length, buffer, take);
		upload->result_length += take;
		return;
	}
	event_del(upload->output_event);
	upload->output_done = true;
	finish_if_done(upload);
}

static void on_exit_event(evutil_socket_t fd, short events, void *arg)
{
	struct upload *upload = arg;
	upload->exit_status = archive_run_reap(&upload->process);
	upload->exited = true;
	finish_if_done(upload);
}

static void on_gone(struct api_request *req)
{
	struct upload *upload = api_data(req);
	if (!upload)
		return;
	/* The body goes with the connection: stop feeding it at once. */
	upload->body = NULL;
	upload->body_length = upload->body_sent = 0;
	close_input(upload);
	kill(upload->process.pid, SIGKILL);
}

void upload_extract(struct api_request *req, const char *dest, int input_fd,
		    void (*done)(void *arg, bool ok), void *arg)
{
	struct upload *upload = xcalloc(1, sizeof *upload);
	upload->req = req;
	upload->dest = xstrdup(dest);
	upload->done = done;
	upload->done_arg = arg;
	const char *args[] = {"extract", boxd_config()->work_dir, dest[0] ? dest : ".",
			      "--user", boxd_config()->user ? boxd_config()->user : "root", NULL};
	char why[256];
	if (!archive_run_start(args, input_fd, &upload->process, why, sizeof why)) {
		if (input_fd >= 0)
			close(input_fd);
		api_reply_error(req, 500, "internal", "%s", why);
		if (done)
			done(arg, false);
		free(upload->dest);
		free(upload);
		return;
	}
	if (input_fd >= 0)
		close(input_fd);
	struct event_base *base = boxd_base();
	if (upload->process.input_fd >= 0) {
		upload->body = api_body(req, &upload->body_length);
		upload->input_event = event_new(base, upload->process.input_fd, EV_WRITE | EV_PERSIST,
						on_input, upload);
		event_add(upload->input_event, NULL);
	}
	upload->output_event = event_new(base, upload->process.output_fd, EV_READ | EV_PERSIST,
					 on_output, upload);
	event_add(upload->output_event, NULL);
	upload->exit_event = event_new(base, upload->process.pid_fd, EV_READ, on_exit_event, upload);
	event_add(upload->exit_event, NULL);
	api_set_data(req, upload, NULL);
	api_on_client_gone(req, on_gone);
}
