#include "server.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "router-internal.h"
#include "clock.h"
#include "connection.h"
#include "listeners.h"
#include "log.h"
#include "request-ids.h"
#include "text.h"
#include "xalloc.h"

static struct event_base *loop;
static int unix_fd = -1, vsock_fd = -1;
static struct evconnlistener *unix_listener, *vsock_listener;
static char *socket_path;
/* Watches the socket's directory: a socket file deleted by a careless
 * command (an rm -rf of the run dir) would leave boxd up and unreachable. */
static int watch_fd = -1;
static struct event *watch_event;

/* Out of file descriptors (EMFILE/ENFILE), a listener would fail its accept
 * at once, again and again: libevent retries at full speed and logs each
 * failure (492 MB of log in 10 s). Instead the listeners rest a moment,
 * logged once per rest, and try again; peers wait in the kernel's backlog. */
#define LISTENER_REST_MS 250
#define MAX_LISTENERS 4

static struct evconnlistener *resting[MAX_LISTENERS];
static struct event *rest_timer;

static void on_rest_over(evutil_socket_t fd, short what, void *arg)
{
	for (int i = 0; i < MAX_LISTENERS; i++) {
		if (resting[i])
			evconnlistener_enable(resting[i]);
		resting[i] = NULL;
	}
}

static void rest_listener(struct evconnlistener *listener, int error)
{
	if (!rest_timer)
		rest_timer = evtimer_new(loop, on_rest_over, NULL);
	if (!evtimer_pending(rest_timer, NULL)) {
		/* Once a minute at most, however long it lasts. */
		static int64_t logged_ms;
		static unsigned rests;
		int64_t now = clock_monotonic_ms();
		rests++;
		if (!logged_ms || now - logged_ms >= 60000) {
			log_msg(LOG_LEVEL_WARNING,
				"out of file descriptors (%s): not accepting for %d ms "
				"(%u such pauses since the last report)",
				strerror(error), LISTENER_REST_MS, rests);
			logged_ms = now;
			rests = 0;
		}
		struct timeval delay = {0, LISTENER_REST_MS * 1000};
		evtimer_add(rest_timer, &delay);
	}
	evconnlistener_disable(listener);
	for (int i = 0; i < MAX_LISTENERS; i++) {
		if (resting[i] == listener || !resting[i]) {
			resting[i] = listener;
			return;
		}
	}
}

static void forget_listener(struct evconnlistener *listener)
{
	for (int i = 0; i < MAX_LISTENERS; i++)
		if (resting[i] == listener)
			resting[i] = NULL;
}

static void on_listener_error(struct evconnlistener *listener, void *arg)
{
	int error = errno;
	if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM)
		rest_listener(listener, error);
	else
		log_msg(LOG_LEVEL_WARNING, "accepting a connection failed: %s", strerror(error));
}

/* A peer accepted on a listener: checked (uid or CID), then served. */
static void on_accept(struct evconnlistener *listener, evutil_socket_t fd, struct sockaddr *peer,
		      int length, void *arg)
{
	if (!listeners_peer_allowed(evconnlistener_get_fd(listener), fd, peer, (socklen_t)length)) {
		close(fd);
		return;
	}
	http_conn_accept(fd);
}

/* Serves `fd` (listening already), with the rest-when-out-of-fds rule. */
static struct evconnlistener *serve_listener(int fd)
{
	/* Backlog 0: libevent leaves the socket's own listen() (1024) alone. */
	struct evconnlistener *listener =
		evconnlistener_new(loop, on_accept, NULL, LEV_OPT_CLOSE_ON_FREE, 0, fd);
	if (listener)
		evconnlistener_set_error_cb(listener, on_listener_error);
	return listener;
}

static bool serve_unix(const char *path, char *error, size_t error_size)
{
	int fd = listeners_open_unix(path, error, error_size);
	if (fd < 0)
		return false;
	listeners_guard_unix(fd);
	struct evconnlistener *listener = serve_listener(fd);
	if (!listener) {
		snprintf(error, error_size, "cannot serve on %s", path);
		listeners_unguard(fd);
		close(fd);
		return false;
	}
	unix_fd = fd;
	unix_listener = listener;
	return true;
}

/* The socket file is gone: bind a new one at the same path. The old
 * listening socket is closed (it can no longer be reached by name). */
static void recreate_socket(void)
{
	if (unix_listener) {
		listeners_unguard(unix_fd);
		forget_listener(unix_listener);
		evconnlistener_free(unix_listener); /* closes the fd */
		unix_listener = NULL;
		unix_fd = -1;
	}
	char error[512];
	if (serve_unix(socket_path, error, sizeof error))
		log_msg(LOG_LEVEL_WARNING, "the socket %s was removed; serving on a new one",
			socket_path);
	else
		log_msg(LOG_LEVEL_ERROR, "the socket %s was removed and cannot be made again: %s",
			socket_path, error);
}

static void on_socket_dir_event(evutil_socket_t fd, short what, void *arg)
{
	char buffer[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	const char *name = arg;
	bool removed = false;
	ssize_t n;
	while ((n = read(fd, buffer, sizeof buffer)) > 0) {
		for (char *at = buffer; at < buffer + n;) {
			const struct inotify_event *event = (const struct inotify_event *)at;
			if (event->len && strcmp(event->name, name) == 0)
				removed = true;
			at += sizeof *event + event->len;
		}
	}
	if (removed && access(socket_path, F_OK) != 0)
		recreate_socket();
}

static void watch_socket(void)
{
	char directory[PATH_MAX], name[PATH_MAX];
	snprintf(directory, sizeof directory, "%s", socket_path);
	snprintf(name, sizeof name, "%s", socket_path);
	watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (watch_fd < 0 ||
	    inotify_add_watch(watch_fd, dirname(directory), IN_DELETE | IN_MOVED_FROM) < 0) {
		log_msg(LOG_LEVEL_WARNING,
			"cannot watch %s (%s): a removed socket will not be made again",
			socket_path, strerror(errno));
		if (watch_fd >= 0)
			close(watch_fd);
		watch_fd = -1;
		return;
	}
	static char base[PATH_MAX];
	snprintf(base, sizeof base, "%s", basename(name));
	watch_event = event_new(loop, watch_fd, EV_READ | EV_PERSIST, on_socket_dir_event, base);
	event_add(watch_event, NULL);
}

static void serve_vsock(const struct boxd_config *config)
{
	if (config->vsock_port < 0)
		return;
	char reason[256];
	vsock_fd = listeners_open_vsock((unsigned)config->vsock_port, reason, sizeof reason);
	if (vsock_fd < 0) {
		log_msg(LOG_LEVEL_WARNING, "%s", reason);
		return;
	}
	listeners_guard_vsock(vsock_fd, config->allowed_cids, config->allowed_cid_count);
	vsock_listener = serve_listener(vsock_fd);
	if (!vsock_listener) {
		log_msg(LOG_LEVEL_WARNING,
			"cannot serve vsock port %d; serving on the unix socket only",
			config->vsock_port);
		listeners_unguard(vsock_fd);
		close(vsock_fd);
		vsock_fd = -1;
		return;
	}
	log_msg(LOG_LEVEL_INFO, "serving on vsock port %d", config->vsock_port);
}

bool server_start(struct event_base *base, const struct boxd_config *config, char *error,
		  size_t error_size)
{
	char *store = xasprintf("%s/request-ids", config->run_dir);
	request_ids_open(store, clock_monotonic_ms());
	free(store);
	loop = base;
	router_serve(base);
	/* A client that connects and says nothing, or stops between requests,
	 * is dropped after --idle-timeout; a head must come whole within
	 * HTTP_HEAD_TIMEOUT_SEC (connection.c). */
	static const struct http_conn_router router = {
		.begin = api_request_begin,
		.body_limit = api_request_body_limit,
		.streams_body = api_request_streams_body,
		.too_large = api_request_too_large,
		.run = api_request_run,
		.lost = api_request_lost,
		.fail = api_request_fail,
	};
	http_conn_setup(base, config->idle_timeout_sec, &router);

	if (!serve_unix(config->socket_path, error, error_size))
		return false;
	socket_path = xstrdup(config->socket_path);
	log_msg(LOG_LEVEL_INFO, "serving on %s", socket_path);
	watch_socket();
	serve_vsock(config);
	return true;
}

void server_stop(void)
{
	if (rest_timer) {
		event_free(rest_timer);
		rest_timer = NULL;
	}
	memset(resting, 0, sizeof resting);
	if (watch_event) {
		event_free(watch_event);
		watch_event = NULL;
	}
	if (watch_fd >= 0)
		close(watch_fd);
	watch_fd = -1;
	if (unix_listener)
		evconnlistener_free(unix_listener); /* closes the fd */
	if (vsock_listener)
		evconnlistener_free(vsock_listener);
	unix_listener = vsock_listener = NULL;
	http_conn_close_all();
	if (unix_fd >= 0)
		listeners_unguard(unix_fd);
	if (vsock_fd >= 0)
		listeners_unguard(vsock_fd);
	unix_fd = vsock_fd = -1;
	if (socket_path) {
		unlink(socket_path);
		free(socket_path);
		socket_path = NULL;
	}
}
