/* screen-display.c: the worker's connection to the X display: made on
 * demand, told to boxd when it comes or goes, and while the server is not
 * there, /tmp/.X11-unix watched (inotify) to connect as soon as it is back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "input.h"
#include "log.h"
#include "screen-worker.h"
#include "windows.h"

#define WORKER_X11_SOCKET_DIR "/tmp/.X11-unix"
/* After the server's socket appears it may take a moment to accept. */
#define WORKER_CONNECT_TRIES 40
#define WORKER_CONNECT_PAUSE_US 50000

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
	worker->windows = windows_new(screen_display(worker->screen));
	worker_clipboard_start(worker);
	worker_unwatch(worker);
	log_msg(LOG_LEVEL_INFO, "connected to the X display %s (%dx%d)", worker->display_name,
		screen_width(worker->screen), screen_height(worker->screen));
	worker_announce(worker);
	return true;
}

void worker_on_watch(struct worker *worker)
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
