/* relay.c: the relay's thread, its listeners and its tables (relay.h).
 *
 * The thread runs an event_base of its own, so boxd's loop never waits on a
 * copy. boxd does not enable libevent's threading: nothing of this base is
 * touched from another thread while it runs. relay_set() copies the tables
 * under `lock` and wakes the thread through an eventfd. Routes are looked
 * up under the lock at each accept, so a connection made after relay_set()
 * returns follows the new routes; the thread opens and closes the vsock
 * listeners to match the new ingress when it wakes. The copying itself is
 * relay-pump.c's. */
#include "relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
/* netinet/in.h first: the kernel's header then leaves its definitions be. */
#include <netinet/in.h>
#include <linux/netfilter_ipv4.h>
#include <linux/vm_sockets.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "relay-pump.h"
#include "xalloc.h"

#define ACCEPT_BATCH 64
/* Out of fds, the listeners rest this long (as boxd's own do, server.c). */
#define REST_MS 250

struct listener {
	int fd; /* -1: a vsock port that could not be listened on */
	struct event *event;
	bool vsock;
	unsigned vsock_port, target_port;
	int error; /* why it could not (logged when it changes) */
};

/* Shared with the loop thread, under `lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct relay_route *routes;
static size_t route_count;
static struct relay_ingress *ingress;
static size_t ingress_count;
static bool ingress_changed, stopping;

/* Made by relay_start before the thread exists, freed by relay_stop after
 * it ended; the thread's meanwhile. */
static struct event_base *base;
static int wake_fd = -1;
static struct event *wake_event, *rest_timer;
static struct listener tcp_listener = {.fd = -1};
static uint16_t tcp_port;
static unsigned *cids;
static int cid_count;

/* The thread's alone. */
static struct listener **ingress_listeners;
static size_t ingress_listener_count;
static bool resting;

/* The loop thread's (relay_start, relay_stop). */
static pthread_t thread;
static bool running;

static atomic_uint connections_open, ingress_open;
static _Atomic int64_t last_ingress_ms;

/* ---- routes ---- */

/* A route whose target leads back into the relay (its listener, or the
 * route's own destination, which the rules bring here again) would loop
 * until the fds run out. */
static bool route_loops(const struct relay_route *route)
{
	if (route->target.ss_family != AF_INET)
		return false;
	const struct sockaddr_in *in = (const struct sockaddr_in *)&route->target;
	uint16_t port = ntohs(in->sin_port);
	return (port == tcp_port && in->sin_addr.s_addr == htonl(INADDR_LOOPBACK)) ||
	       (port == route->port && in->sin_addr.s_addr == route->ip);
}

/* The target of the route to `ip` (network order) `port`, copied. */
static bool route_find(uint32_t ip, uint16_t port, struct relay_target *target)
{
	bool found = false;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < route_count && !found; i++) {
		const struct relay_route *route = &routes[i];
		if (route->ip != ip || route->port != port || route_loops(route))
			continue;
		memcpy(&target->address, &route->target, route->target_length);
		target->length = route->target_length;
		found = true;
	}
	pthread_mutex_unlock(&lock);
	return found;
}

/* ---- accepting ---- */

static void on_pump_closed(bool ingress_pump)
{
	atomic_fetch_sub(&connections_open, 1);
	if (ingress_pump) {
		/* Its end is use too: the box has been idle only since then. */
		atomic_store(&last_ingress_ms, clock_now_ms());
		atomic_fetch_sub(&ingress_open, 1);
	}
}

/* A connection the rules DNATed to the TCP listener: its original
 * destination says where it goes. */
static void admit_routed(int client)
{
	struct sockaddr_in original;
	socklen_t length = sizeof original;
	memset(&original, 0, sizeof original);
	struct relay_target target;
	if (getsockopt(client, SOL_IP, SO_ORIGINAL_DST, &original, &length) != 0 ||
	    original.sin_family != AF_INET ||
	    !route_find(original.sin_addr.s_addr, ntohs(original.sin_port), &target)) {
		char ip[INET_ADDRSTRLEN] = "?";
		inet_ntop(AF_INET, &original.sin_addr, ip, sizeof ip);
		log_msg(LOG_LEVEL_DEBUG, "relay: closed a connection to %s:%u, which no route has",
			ip, ntohs(original.sin_port));
		close(client);
		return;
	}
	atomic_fetch_add(&connections_open, 1);
	relay_pump_start(base, client, &target, 1, false);
}

static bool cid_allowed(unsigned cid)
{
	for (int i = 0; i < cid_count; i++) {
		if (cids[i] == cid)
			return true;
	}
	return false;
}

static struct relay_target loopback_target(int family, unsigned port)
{
	struct relay_target target;
	memset(&target, 0, sizeof target);
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&target.address;
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		target.length = sizeof *in;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&target.address;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		in6->sin6_addr = in6addr_loopback;
		target.length = sizeof *in6;
	}
	return target;
}

/* A connection from the control plane: checked like boxd's own vsock
 * peers (the host, --vsock-allow-cid), then sent to the target port on
 * 127.0.0.1, or on ::1 when nothing takes IPv4 there. */
static void admit_ingress(const struct listener *listener, int client,
			  const struct sockaddr_storage *peer)
{
	const struct sockaddr_vm *vm = (const struct sockaddr_vm *)peer;
	if (vm->svm_family != AF_VSOCK || !cid_allowed(vm->svm_cid)) {
		log_msg(LOG_LEVEL_WARNING,
			"relay: refused a vsock peer with CID %u on port %u: only the host (CID 2) "
			"and --vsock-allow-cid may connect",
			vm->svm_family == AF_VSOCK ? vm->svm_cid : 0, listener->vsock_port);
		close(client);
		return;
	}
	atomic_store(&last_ingress_ms, clock_now_ms());
	struct relay_target targets[2] = {loopback_target(AF_INET, listener->target_port),
					  loopback_target(AF_INET6, listener->target_port)};
	atomic_fetch_add(&connections_open, 1);
	atomic_fetch_add(&ingress_open, 1);
	relay_pump_start(base, client, targets, 2, true);
}

static void listeners_enable(bool on)
{
	for (size_t i = 0; i <= ingress_listener_count; i++) {
		struct listener *listener = i ? ingress_listeners[i - 1] : &tcp_listener;
		if (listener->event && on)
			event_add(listener->event, NULL);
		else if (listener->event)
			event_del(listener->event);
	}
}

static void on_rest_over(evutil_socket_t fd, short what, void *arg)
{
	resting = false;
	listeners_enable(true);
}

/* Out of fds, accept fails at once, again and again: the listeners rest a
 * moment instead (logged once a minute at most), peers wait in the
 * backlog. */
static void rest(int error)
{
	static int64_t logged_ms;
	int64_t now = clock_monotonic_ms();
	if (!logged_ms || now - logged_ms >= 60000) {
		log_msg(LOG_LEVEL_WARNING,
			"relay: out of file descriptors (%s): not accepting for %d ms",
			strerror(error), REST_MS);
		logged_ms = now;
	}
	resting = true;
	listeners_enable(false);
	struct timeval delay = {0, REST_MS * 1000};
	evtimer_add(rest_timer, &delay);
}

static void on_accept(evutil_socket_t fd, short what, void *arg)
{
	struct listener *listener = arg;
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage peer;
		socklen_t length = sizeof peer;
		memset(&peer, 0, sizeof peer);
		int client = accept4(fd, (struct sockaddr *)&peer, &length,
				     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (client >= 0) {
			if (listener->vsock)
				admit_ingress(listener, client, &peer);
			else
				admit_routed(client);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			rest(errno);
		else if (errno != EAGAIN && errno != EWOULDBLOCK)
			log_msg(LOG_LEVEL_WARNING, "relay: accepting a connection failed: %s",
				strerror(errno));
		return;
	}
}

/* ---- listeners ---- */

static bool listener_serve(struct listener *listener, int fd)
{
	listener->event = event_new(base, fd, EV_READ | EV_PERSIST, on_accept, listener);
	if (!listener->event)
		return false;
	listener->fd = fd;
	if (!resting)
		event_add(listener->event, NULL);
	return true;
}

static void listener_close(struct listener *listener)
{
	if (listener->event)
		event_free(listener->event);
	listener->event = NULL;
	if (listener->fd >= 0)
		close(listener->fd);
	listener->fd = -1;
}

static int open_vsock(unsigned port)
{
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_vm address = {
		.svm_family = AF_VSOCK,
		.svm_cid = VMADDR_CID_ANY,
		.svm_port = port,
	};
	if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0 ||
	    listen(fd, SOMAXCONN) != 0) {
		int error = errno;
		close(fd);
		errno = error;
		return -1;
	}
	return fd;
}

/* No vsock device (a dev machine, a container) is normal: said once. */
static void log_vsock_failure(unsigned port, int error)
{
	static bool said_no_vsock;
	if (error == EAFNOSUPPORT || error == ENODEV || error == EADDRNOTAVAIL) {
		if (!said_no_vsock)
			log_msg(LOG_LEVEL_INFO,
				"relay: no vsock here (%s): the services' ways in (vsock port %u "
				"and others) are not listened on",
				strerror(error), port);
		said_no_vsock = true;
		return;
	}
	log_msg(LOG_LEVEL_WARNING,
		"relay: cannot listen on vsock port %u (%s): that way in is closed", port,
		strerror(error));
}

/* Listens on the listener's vsock port (again, after a failure); a failure
 * is logged once per port and cause, not at every relay_set(). */
static void ingress_listen(struct listener *listener)
{
	int fd = open_vsock(listener->vsock_port);
	int error = fd < 0 ? errno : 0;
	if (fd >= 0 && !listener_serve(listener, fd)) {
		close(fd);
		error = ENOMEM;
	}
	if (error && error != listener->error)
		log_vsock_failure(listener->vsock_port, error);
	listener->error = error;
}

static const struct relay_ingress *ingress_find(const struct relay_ingress *entries, size_t count,
						unsigned vsock_port)
{
	for (size_t i = 0; i < count; i++) {
		if (entries[i].vsock_port == vsock_port)
			return &entries[i];
	}
	return NULL;
}

static struct listener *listener_find(unsigned vsock_port)
{
	for (size_t i = 0; i < ingress_listener_count; i++) {
		if (ingress_listeners[i]->vsock_port == vsock_port)
			return ingress_listeners[i];
	}
	return NULL;
}

/* Makes the vsock listeners those of `wanted`. A listener whose port stays
 * is kept as it is (its backlog, the connections it accepted): only its
 * target port is updated. */
static void apply_ingress(const struct relay_ingress *wanted, size_t count)
{
	size_t kept = 0;
	for (size_t i = 0; i < ingress_listener_count; i++) {
		struct listener *listener = ingress_listeners[i];
		const struct relay_ingress *entry =
			ingress_find(wanted, count, listener->vsock_port);
		if (entry) {
			listener->target_port = entry->target_port;
			ingress_listeners[kept++] = listener;
		} else {
			listener_close(listener);
			free(listener);
		}
	}
	ingress_listener_count = kept;
	ingress_listeners = xrealloc(ingress_listeners, (kept + count) * sizeof *ingress_listeners);
	for (size_t i = 0; i < count; i++) {
		struct listener *listener = listener_find(wanted[i].vsock_port);
		if (!listener) {
			listener = xcalloc(1, sizeof *listener);
			*listener = (struct listener){.fd = -1,
						      .vsock = true,
						      .vsock_port = wanted[i].vsock_port,
						      .target_port = wanted[i].target_port};
			ingress_listeners[ingress_listener_count++] = listener;
		}
		if (listener->fd < 0)
			ingress_listen(listener);
	}
}

static void close_ingress_listeners(void)
{
	for (size_t i = 0; i < ingress_listener_count; i++) {
		listener_close(ingress_listeners[i]);
		free(ingress_listeners[i]);
	}
	free(ingress_listeners);
	ingress_listeners = NULL;
	ingress_listener_count = 0;
}

/* ---- the thread ---- */

/* What relay_set() or relay_stop() asked for; false when the thread is to
 * end. */
static bool take_changes(void)
{
	struct relay_ingress *wanted = NULL;
	size_t count = 0;
	pthread_mutex_lock(&lock);
	bool stop = stopping, changed = ingress_changed;
	if (changed && !stop && ingress_count) {
		count = ingress_count;
		wanted = xmalloc(count * sizeof *wanted);
		memcpy(wanted, ingress, count * sizeof *wanted);
	}
	ingress_changed = false;
	pthread_mutex_unlock(&lock);
	if (changed && !stop)
		apply_ingress(wanted, count);
	free(wanted);
	return !stop;
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
	uint64_t count;
	if (read(wake_fd, &count, sizeof count) < 0) {
		/* EAGAIN: another wakeup read it already; the tables tell. */
	}
	if (!take_changes())
		event_base_loopbreak(base);
}

static void *relay_main(void *arg)
{
	relay_pump_thread_begin(on_pump_closed);
	if (take_changes())
		event_base_dispatch(base);
	relay_pump_thread_end();
	close_ingress_listeners();
	return NULL;
}

static void wake(void)
{
	uint64_t one = 1;
	if (wake_fd >= 0 && write(wake_fd, &one, sizeof one) < 0) {
		/* The counter is not near overflow: nothing to do. */
	}
}

/* ---- start, set, stop ---- */

/* Binds `fd` on 127.0.0.1:`port` (0: any); false with errno. */
static bool bind_loopback(int fd, uint16_t port)
{
	struct sockaddr_in address = {.sin_family = AF_INET,
				      .sin_port = htons(port),
				      .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	return bind(fd, (struct sockaddr *)&address, sizeof address) == 0;
}

/* On `preferred` when it is free (the port the boxd before this one used,
 * which the kernel's rules still name: no gap after a restart), else on any. */
static int open_tcp_listener(uint16_t preferred, char *error, size_t error_size)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in address = {0};
	socklen_t length = sizeof address;
	bool bound =
		fd >= 0 && ((preferred && bind_loopback(fd, preferred)) || bind_loopback(fd, 0));
	if (!bound || listen(fd, SOMAXCONN) != 0 ||
	    getsockname(fd, (struct sockaddr *)&address, &length) != 0) {
		snprintf(error, error_size, "the relay cannot listen on 127.0.0.1: %s",
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	tcp_port = ntohs(address.sin_port);
	return fd;
}

static void teardown(void)
{
	listener_close(&tcp_listener);
	if (wake_event)
		event_free(wake_event);
	if (rest_timer)
		event_free(rest_timer);
	wake_event = rest_timer = NULL;
	if (wake_fd >= 0)
		close(wake_fd);
	wake_fd = -1;
	if (base)
		event_base_free(base);
	base = NULL;
	free(cids);
	cids = NULL;
	cid_count = 0;
	resting = false;
}

/* The thread's loop and its events, made here so that a failure is the
 * caller's to report. */
static bool make_loop(uint16_t preferred, char *error, size_t error_size)
{
	int fd = open_tcp_listener(preferred, error, error_size);
	if (fd < 0)
		return false;
	base = event_base_new();
	wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (base && wake_fd >= 0) {
		wake_event = event_new(base, wake_fd, EV_READ | EV_PERSIST, on_wake, NULL);
		rest_timer = evtimer_new(base, on_rest_over, NULL);
	}
	if (!wake_event || !rest_timer || event_add(wake_event, NULL) != 0 ||
	    !listener_serve(&tcp_listener, fd)) {
		snprintf(error, error_size, "the relay cannot make its event loop");
		close(fd);
		return false;
	}
	return true;
}

bool relay_start(const unsigned *allowed_cids, int cid_total, uint16_t *port, char *error,
		 size_t error_size)
{
	if (running) {
		snprintf(error, error_size, "the relay runs already");
		return false;
	}
	if (!make_loop(*port, error, error_size)) {
		teardown();
		return false;
	}
	cid_count = cid_total > 0 ? cid_total : 0;
	cids = xmalloc((size_t)cid_count * sizeof *cids + 1);
	if (cid_count)
		memcpy(cids, allowed_cids, (size_t)cid_count * sizeof *cids);
	pthread_mutex_lock(&lock);
	stopping = false;
	ingress_changed = true; /* what relay_set() gave before the start */
	pthread_mutex_unlock(&lock);
	/* Signals go to boxd's loop thread, not here; a SIGPIPE that splice(2)
	 * raises on a peer gone stays blocked (the error is EPIPE as well). */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int failed = pthread_create(&thread, NULL, relay_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (failed) {
		snprintf(error, error_size, "the relay cannot start its thread: %s",
			 strerror(failed));
		teardown();
		return false;
	}
	running = true;
	*port = tcp_port;
	return true;
}

static void *copy_of(const void *items, size_t count, size_t size)
{
	if (!count)
		return NULL;
	void *copy = xmalloc(count * size);
	memcpy(copy, items, count * size);
	return copy;
}

void relay_set(const struct relay_route *new_routes, size_t new_route_count,
	       const struct relay_ingress *new_ingress, size_t new_ingress_count)
{
	struct relay_route *route_copy = copy_of(new_routes, new_route_count, sizeof *new_routes);
	for (size_t i = 0; i < new_route_count; i++) {
		if (route_copy[i].target_length > sizeof route_copy[i].target)
			route_copy[i].target_length = sizeof route_copy[i].target;
	}
	struct relay_ingress *ingress_copy =
		copy_of(new_ingress, new_ingress_count, sizeof *new_ingress);
	pthread_mutex_lock(&lock);
	struct relay_route *old_routes = routes;
	struct relay_ingress *old_ingress = ingress;
	routes = route_copy;
	route_count = new_route_count;
	ingress = ingress_copy;
	ingress_count = new_ingress_count;
	ingress_changed = true;
	pthread_mutex_unlock(&lock);
	free(old_routes);
	free(old_ingress);
	wake();
}

unsigned relay_ingress_open(void)
{
	return atomic_load(&ingress_open);
}

int64_t relay_last_ingress_ms(void)
{
	return atomic_load(&last_ingress_ms);
}

unsigned relay_connections_open(void)
{
	return atomic_load(&connections_open);
}

void relay_stop(void)
{
	if (running) {
		pthread_mutex_lock(&lock);
		stopping = true;
		pthread_mutex_unlock(&lock);
		wake();
		pthread_join(thread, NULL);
		running = false;
	}
	teardown();
	pthread_mutex_lock(&lock);
	free(routes);
	free(ingress);
	routes = NULL;
	ingress = NULL;
	route_count = ingress_count = 0;
	pthread_mutex_unlock(&lock);
}
