/* screen-worker.c: boxd-screen, the process that owns boxd's connection to
 * the X display and does all X11 and codec work, so that boxd itself links
 * neither and its event loop never waits on X or an encoder.
 *
 * boxd starts it with one end of a socketpair on fd 3 and talks to it in
 * frames (screen-protocol.h, docs/screen.md). Requests are answered one at a
 * time, in order; a recording runs on its own thread meanwhile. While the X
 * server is not there the worker answers display_unavailable and watches
 * /tmp/.X11-unix (inotify, no polling) to connect as soon as it is back.
 * When a connected server goes away the worker exits with
 * SCREEN_EXIT_X_LOST and boxd starts a new one. It exits 0 when boxd closes
 * its end (boxd stopped or died), finishing a recording first. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <libavutil/log.h>

#include "clock.h"
#include "input.h"
#include "io.h"
#include "log.h"
#include "record.h"
#include "screen-encode.h"
#include "screen-protocol.h"
#include "screen-worker.h"
#include "screen.h"
#include "xalloc.h"

#define WORKER_X11_SOCKET_DIR "/tmp/.X11-unix"
/* After the server's socket appears it may take a moment to accept. */
#define WORKER_CONNECT_TRIES 40
#define WORKER_CONNECT_PAUSE_US 50000


/* ---- frames ---- */

void worker_send(struct worker *worker, cJSON *json, const void *payload, size_t length)
{
	char *text = cJSON_PrintUnformatted(json);
	cJSON_Delete(json);
	struct screen_frame_header header = { (uint32_t)strlen(text), (uint32_t)length };
	struct iovec parts[3] = { { &header, sizeof header }, { text, header.json_length },
				  { (void *)payload, length } };
	int count = length ? 3 : 2, first = 0;
	while (first < count) {
		ssize_t n = writev(worker->fd, parts + first, count - first);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			/* boxd is gone; the read side notices and ends the worker. */
			break;
		}
		while (first < count && (size_t)n >= parts[first].iov_len)
			n -= (ssize_t)parts[first++].iov_len;
		if (first < count) {
			parts[first].iov_base = (uint8_t *)parts[first].iov_base + n;
			parts[first].iov_len -= (size_t)n;
		}
	}
	free(text);
}

cJSON *worker_answer(double id)
{
	cJSON *json = cJSON_CreateObject();
	cJSON_AddNumberToObject(json, "id", id);
	cJSON_AddBoolToObject(json, "ok", true);
	return json;
}

void worker_error(struct worker *worker, double id, int status, const char *code,
			 const char *fmt, ...)
{
	char message[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	cJSON *json = cJSON_CreateObject();
	cJSON_AddNumberToObject(json, "id", id);
	cJSON *error = cJSON_AddObjectToObject(json, "error");
	cJSON_AddNumberToObject(error, "status", status);
	cJSON_AddStringToObject(error, "code", code);
	cJSON_AddStringToObject(error, "message", message);
	worker_send(worker, json, NULL, 0);
}

/* ---- the display ---- */

static void worker_announce(struct worker *worker)
{
	int up = worker->screen != NULL;
	if (worker->announced == up)
		return;
	worker->announced = up;
	cJSON *json = cJSON_CreateObject();
	cJSON_AddStringToObject(json, "event", "display");
	cJSON_AddStringToObject(json, "name", worker->display_name);
	cJSON_AddBoolToObject(json, "up", up);
	if (up) {
		cJSON_AddNumberToObject(json, "width", screen_width(worker->screen));
		cJSON_AddNumberToObject(json, "height", screen_height(worker->screen));
	}
	worker_send(worker, json, NULL, 0);
}

/* The local socket name of the display (":57" -> "X57"), or false for a
 * display reached over the network, which inotify cannot watch. */
static bool worker_socket_name(const char *display, char *name, size_t size)
{
	const char *colon = strrchr(display, ':');
	if (!colon || (colon != display && strncmp(display, "unix:", 5) != 0))
		return false;
	char *end;
	long number = strtol(colon + 1, &end, 10);
	if (end == colon + 1 || (*end && *end != '.') || number < 0)
		return false;
	snprintf(name, size, "X%ld", number);
	return true;
}

static void worker_watch(struct worker *worker)
{
	char name[32];
	if (worker->watch_fd >= 0 || !worker_socket_name(worker->display_name, name, sizeof name))
		return;
	worker->watch_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (worker->watch_fd < 0)
		return;
	/* The directory may not exist before the first server starts. */
	if (inotify_add_watch(worker->watch_fd, WORKER_X11_SOCKET_DIR,
			      IN_CREATE | IN_MOVED_TO | IN_ATTRIB) < 0)
		inotify_add_watch(worker->watch_fd, "/tmp", IN_CREATE | IN_MOVED_TO);
}

static void worker_unwatch(struct worker *worker)
{
	if (worker->watch_fd >= 0)
		close(worker->watch_fd);
	worker->watch_fd = -1;
}

bool worker_connect(struct worker *worker, char *error, size_t error_size)
{
	if (worker->screen)
		return true;
	worker->screen = screen_open(worker->display_name, error, error_size);
	if (!worker->screen) {
		worker_watch(worker);
		worker_announce(worker);
		return false;
	}
	worker->grabber = screen_grabber_new(worker->screen);
	worker->input = input_new(worker->screen);
	worker_unwatch(worker);
	log_msg(LOG_LEVEL_INFO, "connected to the X display %s (%dx%d)", worker->display_name,
		screen_width(worker->screen), screen_height(worker->screen));
	worker_announce(worker);
	return true;
}

static void worker_on_watch(struct worker *worker)
{
	char buffer[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	char wanted[32];
	bool relevant = false;
	worker_socket_name(worker->display_name, wanted, sizeof wanted);
	ssize_t n;
	while ((n = read(worker->watch_fd, buffer, sizeof buffer)) > 0) {
		for (char *at = buffer; at < buffer + n;) {
			struct inotify_event *event = (struct inotify_event *)at;
			if (event->len && (strcmp(event->name, wanted) == 0 ||
					   strcmp(event->name, ".X11-unix") == 0))
				relevant = true;
			at += sizeof *event + event->len;
		}
	}
	if (!relevant)
		return;
	/* Watch the socket directory itself if it just appeared. */
	worker_unwatch(worker);
	char error[256];
	for (int i = 0; i < WORKER_CONNECT_TRIES; i++) {
		if (worker_connect(worker, error, sizeof error))
			return;
		usleep(WORKER_CONNECT_PAUSE_US);
	}
	log_msg(LOG_LEVEL_INFO, "%s", error);
}

/* ---- requests ---- */

/* A number given as a JSON number or as text (query strings arrive as text). */
bool worker_number(const cJSON *request, const char *name, double fallback, double *value)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(request, name);
	if (!item || cJSON_IsNull(item)) {
		*value = fallback;
		return true;
	}
	if (cJSON_IsNumber(item)) {
		*value = item->valuedouble;
		return true;
	}
	if (!cJSON_IsString(item) || !item->valuestring[0] || isspace((unsigned char)item->valuestring[0]))
		return false;
	char *end;
	errno = 0;
	*value = strtod(item->valuestring, &end);
	return !*end && errno == 0 && *value == *value; /* rejects NaN too */
}

bool worker_integer(const cJSON *request, const char *name, long fallback, long minimum,
		    long maximum, long *value)
{
	/* As text, an integer is plain decimal digits: no "1e3", "0x10" or " 5". */
	const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(request, name));
	if (text && text[strspn(text, "-0123456789")] != '\0')
		return false;
	double number;
	/* Range first: converting an out-of-range double to an integer is undefined. */
	if (!worker_number(request, name, (double)fallback, &number) || number < minimum ||
	    number > maximum || number != (double)(long)number)
		return false;
	*value = (long)number;
	return true;
}

static void worker_handle(struct worker *worker, cJSON *request, char *error, size_t error_size)
{
	double id = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(request, "id"));
	const char *op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(request, "op"));
	if (id != id || !op) {
		worker_error(worker, id == id ? id : 0, 400, "bad_request", "a request needs an id and an op");
		return;
	}
	const struct worker_op *handler = worker_find_op(op);
	if (!handler) {
		worker_error(worker, id, 400, "bad_request", "unknown op \"%.40s\"", op);
		return;
	}
	if (handler->needs_display && !worker_connect(worker, error, error_size)) {
		worker_error(worker, id, 503, "display_unavailable", "%s", error);
		return;
	}
	handler->run(worker, id, request);
}

static bool worker_read_request(struct worker *worker)
{
	struct screen_frame_header header;
	if (!io_read_full(worker->fd, &header, sizeof header))
		return false;
	if (header.json_length == 0 || header.json_length > SCREEN_FRAME_MAX_JSON ||
	    header.payload_length != 0) {
		log_msg(LOG_LEVEL_ERROR, "malformed frame from boxd (%u+%u bytes); ending",
			header.json_length, header.payload_length);
		return false;
	}
	char *text = xmalloc(header.json_length + 1);
	bool ok = io_read_full(worker->fd, text, header.json_length);
	text[header.json_length] = '\0';
	cJSON *request = ok ? cJSON_Parse(text) : NULL;
	free(text);
	if (!ok)
		return false;
	if (!cJSON_IsObject(request)) {
		log_msg(LOG_LEVEL_ERROR, "a request from boxd is not a JSON object; ending");
		cJSON_Delete(request);
		return false;
	}
	char error[512];
	worker_handle(worker, request, error, sizeof error);
	cJSON_Delete(request);
	return true;
}

/* ---- main ---- */

static void worker_loop(struct worker *worker)
{
	for (;;) {
		struct pollfd fds[4] = {
			{ .fd = worker->fd, .events = POLLIN },
			{ .fd = worker->wake_fd, .events = POLLIN },
			{ .fd = worker->watch_fd, .events = POLLIN },
			{ .fd = worker->screen ? ConnectionNumber(screen_display(worker->screen)) : -1,
			  .events = POLLIN },
		};
		if (worker->screen)
			screen_handle_events(worker->screen);
		int timeout = worker->input ? input_restore_due_ms(worker->input) : -1;
		int ready = poll(fds, 4, timeout);
		if (ready < 0 && errno != EINTR) {
			log_msg(LOG_LEVEL_ERROR, "poll: %s", strerror(errno));
			return;
		}
		if (worker->input && input_restore_due_ms(worker->input) == 0)
			input_restore_keymap(worker->input);
		if (ready <= 0)
			continue;
		if (fds[1].revents & POLLIN)
			worker_on_record_wake(worker);
		if (fds[2].revents & POLLIN)
			worker_on_watch(worker);
		if (fds[0].revents & (POLLIN | POLLHUP | POLLERR) && !worker_read_request(worker))
			return;
	}
}

static void worker_usage(void)
{
	fprintf(stderr, "usage: boxd-screen [--display :N] [--fd N] [--verbose]\n"
			"boxd starts this worker itself; see docs/screen.md.\n");
}

int main(int argc, char **argv)
{
	struct worker worker = { .display_name = ":99", .fd = SCREEN_WORKER_FD,
				 .watch_fd = -1, .announced = -1 };
	static const struct option options[] = {
		{ "display", required_argument, NULL, 'd' },
		{ "fd", required_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int option;
	while ((option = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (option) {
		case 'd': worker.display_name = optarg; break;
		case 'f': worker.fd = atoi(optarg); break;
		case 'v': log_set_level(LOG_LEVEL_DEBUG); break;
		default: worker_usage(); return option == 'h' ? 0 : 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	/* FFmpeg's notices (deprecated pixel formats and such) are noise here. */
	av_log_set_level(AV_LOG_ERROR);
	worker.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	worker.encoder = screen_encoder_new();
	char error[256];
	if (!worker_connect(&worker, error, sizeof error))
		log_msg(LOG_LEVEL_INFO, "%s; waiting for it", error);
	worker_loop(&worker);
	worker_stop_recording(&worker, false);
	input_free(worker.input);
	screen_encoder_free(worker.encoder);
	screen_grabber_free(worker.grabber);
	screen_close(worker.screen);
	return 0;
}
