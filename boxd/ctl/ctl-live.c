/* ctl-live.c: boxctl live, the live screen written to a file as it comes.
 *
 * The stream is fragmented MP4; only whole top-level boxes are written (a
 * moof together with its mdat), so however boxctl ends (--seconds, Ctrl-C,
 * boxd going away) the file holds whole fragments and plays to its last
 * one, and a player (ffplay, mpv) can play it while it grows. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "xalloc.h"

struct live_sink {
	int fd;
	const char *name;
	struct client_response *response;
	uint8_t *pending; /* bytes not yet written: the last, incomplete box(es) */
	size_t length, capacity;
	char error[512]; /* an error answer's body */
	size_t error_length;
	bool failed;
};

/* Blocked while a box is written, so a stop never cuts one. */
static sigset_t live_signals;

static void live_on_signal(int signal_number)
{
	/* Signals are blocked while a box is written: the file is whole here. */
	static const char text[] = "boxctl live: stopped\n";
	ssize_t unused = write(STDERR_FILENO, text, sizeof text - 1);
	(void)unused;
	_exit(signal_number == SIGALRM ? 0 : 128 + signal_number);
}

static bool live_write(struct live_sink *sink, const uint8_t *data, size_t length)
{
	sigprocmask(SIG_BLOCK, &live_signals, NULL);
	bool ok = true;
	while (length > 0) {
		ssize_t n = write(sink->fd, data, length);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "boxctl live: cannot write %s: %s\n", sink->name,
				strerror(errno));
			ok = false;
			break;
		}
		data += n;
		length -= (size_t)n;
	}
	sigprocmask(SIG_UNBLOCK, &live_signals, NULL);
	return ok;
}

static uint64_t live_be(const uint8_t *bytes, int count)
{
	uint64_t value = 0;
	for (int i = 0; i < count; i++)
		value = value << 8 | bytes[i];
	return value;
}

/* Writes out every whole box that does not wait for a following one (a
 * moof waits for its mdat). */
static bool live_flush_boxes(struct live_sink *sink)
{
	size_t at = 0, writable = 0;
	while (sink->length - at >= 8) {
		uint64_t size = live_be(sink->pending + at, 4);
		if (size == 1) {
			if (sink->length - at < 16)
				break;
			size = live_be(sink->pending + at + 8, 8);
		}
		if (size < 8) {
			/* Not MP4 as expected: pass everything on as it is. */
			writable = sink->length;
			break;
		}
		if (sink->length - at < size)
			break;
		bool moof = memcmp(sink->pending + at + 4, "moof", 4) == 0;
		at += size;
		if (!moof)
			writable = at;
	}
	if (!writable)
		return true;
	bool ok = live_write(sink, sink->pending, writable);
	memmove(sink->pending, sink->pending + writable, sink->length - writable);
	sink->length -= writable;
	return ok;
}

static bool live_on_data(void *arg, const char *data, size_t length)
{
	struct live_sink *sink = arg;
	if (sink->response->status != 200) {
		size_t room = sizeof sink->error - 1 - sink->error_length;
		size_t take = length < room ? length : room;
		memcpy(sink->error + sink->error_length, data, take);
		sink->error_length += take;
		sink->error[sink->error_length] = '\0';
		return true;
	}
	if (sink->length + length > sink->capacity) {
		sink->capacity = (sink->length + length) * 2;
		sink->pending = xrealloc(sink->pending, sink->capacity);
	}
	memcpy(sink->pending + sink->length, data, length);
	sink->length += length;
	if (!live_flush_boxes(sink)) {
		sink->failed = true;
		return false;
	}
	return true;
}

static int run_live(struct ctl *ctl, int argc, char **argv)
{
	static const struct option options[] = {
		{"output", required_argument, NULL, 'o'},
		{"fps", required_argument, NULL, 'f'},
		{"scale", required_argument, NULL, 's'},
		{"seconds", required_argument, NULL, 't'},
		{0},
	};
	const char *output = NULL, *fps = NULL, *scale = NULL;
	long seconds = 0;
	int option;
	optind = 1;
	while ((option = getopt_long(argc, argv, "o:", options, NULL)) != -1) {
		switch (option) {
		case 'o': output = optarg; break;
		case 'f': fps = optarg; break;
		case 's': scale = optarg; break;
		case 't': {
			char *end;
			seconds = strtol(optarg, &end, 10);
			if (!optarg[0] || *end || seconds < 1)
				return ctl_usage_error("live",
						       "--seconds takes a whole number of seconds");
			break;
		}
		default: return ctl_usage_error("live", "see boxctl --help");
		}
	}
	if (optind < argc)
		return ctl_usage_error("live", "unexpected argument \"%s\"", argv[optind]);
	if (!output)
		return ctl_usage_error(
			"live", "give the file to write with -o FILE (- for standard output)");
	char path[200];
	int n = snprintf(path, sizeof path, "/v1/screen/live?");
	const char *names[2] = {"fps", "scale"}, *values[2] = {fps, scale};
	for (int i = 0; i < 2; i++) {
		if (!values[i])
			continue;
		char *encoded = ctl_url_encode(values[i]);
		n += snprintf(path + n, sizeof path - (size_t)n, "%s=%.20s&", names[i], encoded);
		free(encoded);
	}
	path[n - 1] = '\0'; /* the last '&' or the lone '?' */
	struct client *client = ctl_client(ctl);
	if (!client)
		return CTL_API_ERROR;
	bool to_stdout = strcmp(output, "-") == 0;
	int fd = to_stdout ? STDOUT_FILENO
			   : open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "boxctl live: cannot create %s: %s\n", output, strerror(errno));
		return CTL_API_ERROR;
	}
	sigemptyset(&live_signals);
	sigaddset(&live_signals, SIGINT);
	sigaddset(&live_signals, SIGTERM);
	sigaddset(&live_signals, SIGALRM);
	sigaddset(&live_signals, SIGPIPE);
	struct sigaction action = {.sa_handler = live_on_signal};
	sigaction(SIGINT, &action, NULL);
	sigaction(SIGTERM, &action, NULL);
	sigaction(SIGALRM, &action, NULL);
	/* A closed pipe (a player that quit): the end, not a crash. */
	sigaction(SIGPIPE, &action, NULL);
	if (seconds)
		alarm((unsigned)seconds);
	struct client_response response = {0};
	struct live_sink sink = {
		.fd = fd, .name = to_stdout ? "standard output" : output, .response = &response};
	char error[256];
	bool ok = client_request_stream(client, "GET", path, NULL, NULL, 0, NULL, live_on_data,
					&sink, &response, error, sizeof error);
	alarm(0);
	int status = CTL_OK;
	if (response.status && response.status != 200) {
		cJSON *json = cJSON_Parse(sink.error);
		const char *message = cJSON_GetStringValue(
			cJSON_GetObjectItem(cJSON_GetObjectItem(json, "error"), "message"));
		fprintf(stderr, "boxctl: %s\n", message ? message : "boxd refused the live view");
		cJSON_Delete(json);
		status = CTL_API_ERROR;
	} else if (!ok && !sink.failed) {
		fprintf(stderr, "boxctl live: %s\n", error);
		status = CTL_API_ERROR;
	} else if (sink.failed) {
		status = CTL_API_ERROR;
	} else {
		fprintf(stderr, "boxctl live: the stream ended (the display went away?)\n");
		status = CTL_API_ERROR;
	}
	client_response_free(&response);
	free(sink.pending);
	if (!to_stdout)
		close(fd);
	return status;
}

const struct ctl_command ctl_live_commands[] = {
	{"live",
	 "  live -o FILE|- [--fps N] [--scale S] [--seconds N]\n"
	 "                              the live screen as fragmented MP4 (H.264), written\n"
	 "                              as it comes (play it with ffplay or mpv meanwhile)",
	 run_live},
	{0},
};
