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
 * its end (boxd stopped or died, or retired an idle worker), finishing a
 * recording first. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
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
#include "windows.h"
#include "xalloc.h"

static void worker_handle(struct worker *worker, cJSON *request, char *error, size_t error_size)
{
	double id = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(request, "id"));
	const char *op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(request, "op"));
	if (id != id || !op) {
		worker_error(worker, id == id ? id : 0, FAILURE_BAD_REQUEST,
			     "a request needs an id and an op");
		return;
	}
	const struct worker_op *handler = worker_find_op(op);
	if (!handler) {
		worker_error(worker, id, FAILURE_BAD_REQUEST, "unknown op \"%.40s\"", op);
		return;
	}
	if (handler->needs_display && !worker_connect(worker, error, error_size)) {
		worker_error(worker, id, FAILURE_DISPLAY_UNAVAILABLE, "%s", error);
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
	    header.payload_length > SCREEN_REQUEST_MAX_PAYLOAD) {
		log_msg(LOG_LEVEL_ERROR, "malformed frame from boxd (%u+%u bytes); ending",
			header.json_length, header.payload_length);
		return false;
	}
	char *text = xmalloc(header.json_length + 1);
	bool ok = io_read_full(worker->fd, text, header.json_length);
	text[header.json_length] = '\0';
	cJSON *request = ok ? cJSON_Parse(text) : NULL;
	free(text);
	/* A value to put on the clipboard comes as the payload. */
	uint8_t *payload = ok ? xmalloc(header.payload_length + 1) : NULL;
	ok = ok && io_read_full(worker->fd, payload, header.payload_length);
	if (!ok) {
		free(payload);
		cJSON_Delete(request);
		return false;
	}
	if (!cJSON_IsObject(request)) {
		log_msg(LOG_LEVEL_ERROR, "a request from boxd is not a JSON object; ending");
		free(payload);
		cJSON_Delete(request);
		return false;
	}
	char error[512];
	worker->quiet_since_ms = clock_monotonic_ms();
	worker->idle_told = false;
	worker->payload = payload;
	worker->payload_length = header.payload_length;
	worker_handle(worker, request, error, sizeof error);
	worker->payload = NULL;
	worker->payload_length = 0;
	free(payload);
	cJSON_Delete(request);
	return true;
}

/* What keeps the worker from being idle: a recording running, a live
 * viewer, a selection boxd owns (its value lives here), boxd's hold. */
static bool worker_busy(const struct worker *worker)
{
	return worker->record != NULL || worker_live_watched(worker) || worker->held ||
	       (worker->clipboard && clipboard_owns(worker->clipboard));
}

/* Milliseconds until the worker should say it is idle (-1: not to be said,
 * 0: now). A busy worker's quiet time starts when it stops being busy. */
static int worker_idle_due_ms(struct worker *worker)
{
	int64_t now = clock_monotonic_ms();
	if (worker_busy(worker))
		worker->quiet_since_ms = now;
	if (worker->idle_ms <= 0 || worker->idle_told)
		return -1;
	int64_t left = worker->quiet_since_ms + worker->idle_ms - now;
	return left <= 0 ? 0 : (int)(left > INT_MAX ? INT_MAX : left);
}

/* Said once a quiet time; boxd closes its end if it has nothing waiting
 * (a request already on its way keeps the worker: it answers, and its
 * quiet time starts again). */
static void worker_tell_idle(struct worker *worker)
{
	worker->idle_told = true;
	cJSON *event = cJSON_CreateObject();
	cJSON_AddStringToObject(event, "event", "idle");
	cJSON_AddNumberToObject(event, "quietMs",
				(double)(clock_monotonic_ms() - worker->quiet_since_ms));
	worker_send(worker, event, NULL, 0);
}

/* The earlier of two poll timeouts (-1: none). */
static int worker_sooner(int a, int b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

/* ---- main ---- */

/* The X connection, when this thread is the one to take events off it (-1
 * otherwise). A recording's thread takes them every slot; with no live view
 * to wake on damage, watching here too would wake this thread on every
 * reply to the recording's round trips, only to contend for the display. */
static int worker_x_fd(const struct worker *worker)
{
	if (!worker->screen || (worker->record && !worker_live_watched(worker)))
		return -1;
	return ConnectionNumber(screen_display(worker->screen));
}

/* Handles what this thread can take off the connection, and the selection
 * events any thread queued, until nothing waits in Xlib's queue. */
static void worker_take_events(struct worker *worker)
{
	if (!worker->screen)
		return;
	bool more;
	do {
		/* Damage this thread took off the connection: live views wake. */
		if (screen_handle_events(worker->screen))
			worker_live_poke(worker);
		more = worker->clipboard && clipboard_process(worker->clipboard);
	} while (more);
}

static void worker_loop(struct worker *worker)
{
	for (;;) {
		struct pollfd fds[5] = {
			{.fd = worker->fd, .events = POLLIN},
			{.fd = worker->wake_fd, .events = POLLIN},
			{.fd = worker->watch_fd, .events = POLLIN},
			{.fd = worker_x_fd(worker), .events = POLLIN},
			/* Selection events any thread took off the connection. */
			{.fd = worker->clipboard ? clipboard_fd(worker->clipboard) : -1,
			 .events = POLLIN},
		};
		worker_take_events(worker);
		int timeout = worker->input ? input_restore_due_ms(worker->input) : -1;
		if (worker->clipboard)
			timeout = worker_sooner(timeout, clipboard_due_ms(worker->clipboard));
		int idle = worker_idle_due_ms(worker);
		if (idle == 0)
			worker_tell_idle(worker);
		else
			timeout = worker_sooner(timeout, idle);
		int ready = poll(fds, 5, timeout);
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
		if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			worker_live_main_busy(worker, true);
			bool ok = worker_read_request(worker);
			worker_live_main_busy(worker, false);
			if (!ok)
				return;
		}
	}
}

static void worker_usage(void)
{
	fprintf(stderr,
		"usage: boxd-screen [--display :N] [--fd N] [--idle-exit S] [--warm] [--verbose]\n"
		"boxd starts this worker itself; see docs/screen.md.\n");
}

int main(int argc, char **argv)
{
	struct worker worker = {
		.display_name = ":99", .fd = SCREEN_WORKER_FD, .watch_fd = -1, .announced = -1};
	static const struct option options[] = {
		{"display", required_argument, NULL, 'd'},
		{"fd", required_argument, NULL, 'f'},
		{"idle-exit", required_argument, NULL, 'i'},
		{"warm", no_argument, NULL, 'w'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int option;
	bool warm = false;
	while ((option = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (option) {
		case 'd': worker.display_name = optarg; break;
		case 'f': worker.fd = atoi(optarg); break;
		case 'i': worker.idle_ms = (int64_t)atoi(optarg) * 1000; break;
		case 'w': warm = true; break;
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
	worker.quiet_since_ms = clock_monotonic_ms();
	if (!worker_connect(&worker, error, sizeof error))
		log_msg(LOG_LEVEL_INFO, "%s; waiting for it", error);
	else if (warm)
		worker_warm_up(&worker);
	worker_loop(&worker);
	worker_live_stop_all(&worker);
	worker_stop_recording(&worker, false);
	clipboard_free(worker.clipboard);
	input_free(worker.input);
	windows_free(worker.windows);
	screen_encoder_free(worker.encoder);
	shot_cache_clear(&worker.shots);
	screen_grabber_free(worker.grabber);
	screen_close(worker.screen);
	return 0;
}
