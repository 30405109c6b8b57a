/* services-ready.c: when a service listens.
 *
 * Box entries: while the table holds one, a timer looks at the box's
 * listening sockets (sockets.h, one netlink dump) every READY_POLL_MS, so a
 * listener that comes or goes is seen, reported ({"event":"service"}) and
 * answered to its waiters within 250 ms. A table with no box entry and no
 * waiter has no timer: an idle box with no service wakes boxd never.
 * External entries: a waiter makes boxd try to connect to the address
 * (nonblocking) at the same pace until it accepts or the wait ends. */
#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "report.h"
#include "services-internal.h"
#include "services.h"
#include "xalloc.h"

#define READY_POLL_MS 100

struct services_waiter {
	char *name;
	int64_t deadline_ms;
	services_wait_fn done;
	void *arg;
	struct services_waiter *next;
};

/* One connection attempt to an external entry's address. */
struct attempt {
	char *name;
	int fd;
	struct event *writable;
	struct attempt *next;
};

static struct event_base *loop;
static struct event *tick;
static struct services_waiter *waiters;
static struct attempt *attempts;

/* ---- waiters ---- */

static void finish(struct services_waiter *waiter, bool timed_out)
{
	for (struct services_waiter **p = &waiters; *p; p = &(*p)->next)
		if (*p == waiter) {
			*p = waiter->next;
			break;
		}
	services_wait_fn done = waiter->done;
	void *arg = waiter->arg;
	free(waiter->name);
	free(waiter);
	done(arg, timed_out);
}

/* Answers the waiters of `name` (NULL: of every entry) that are done: their
 * entry listens, is gone, or their time is up. */
static void answer_waiters(const char *name)
{
	int64_t now = clock_monotonic_ms();
	struct services_waiter *next;
	for (struct services_waiter *w = waiters; w; w = next) {
		next = w->next;
		if (name && strcmp(name, w->name))
			continue;
		struct service *entry = services_find(services_current(), w->name);
		if (!entry || services_listening(entry))
			finish(w, false);
		else if (now >= w->deadline_ms)
			finish(w, true);
	}
}

/* ---- box entries: the listening sockets ---- */

static void report_change(const struct service *entry)
{
	cJSON *fields = cJSON_CreateObject();
	cJSON_AddStringToObject(fields, "name", entry->name);
	cJSON_AddBoolToObject(fields, "listening", services_listening(entry));
	report_event("service", fields);
	log_msg(LOG_LEVEL_INFO, "service %s %s", entry->name,
		services_listening(entry) ? "listens" : "no longer listens");
}

static void look_at_listeners(void)
{
	struct listen_socket *sockets;
	size_t count;
	if (!sockets_listening(&sockets, &count)) {
		log_msg(LOG_LEVEL_WARNING, "cannot list the listening sockets: %s",
			strerror(errno));
		return;
	}
	struct services_table *table = services_current();
	bool rewire = false;
	for (size_t i = 0; i < table->count; i++) {
		struct service *entry = &table->entries[i];
		if (entry->mode != SERVICE_BOX)
			continue;
		enum listen_reach reach = sockets_reach(sockets, count, entry->target_port);
		if (reach == entry->reach)
			continue;
		bool was_listening = services_listening(entry);
		/* The kernel's rule changes only when the relay comes in or out. */
		rewire |= (reach == LISTEN_V6_LOOPBACK) != (entry->reach == LISTEN_V6_LOOPBACK);
		entry->reach = reach;
		if (services_listening(entry) != was_listening)
			report_change(entry);
	}
	free(sockets);
	if (rewire)
		services_rewire();
}

/* ---- external entries: does the address accept? ---- */

static void end_attempt(struct attempt *attempt, bool accepted)
{
	for (struct attempt **p = &attempts; *p; p = &(*p)->next)
		if (*p == attempt) {
			*p = attempt->next;
			break;
		}
	struct service *entry = services_find(services_current(), attempt->name);
	if (entry && entry->mode == SERVICE_EXTERNAL)
		entry->accepting = accepted;
	event_free(attempt->writable);
	close(attempt->fd);
	char *name = attempt->name;
	free(attempt);
	answer_waiters(name);
	free(name);
}

static void on_attempt_writable(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	int error = 0;
	socklen_t length = sizeof error;
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
	end_attempt(arg, error == 0);
}

static bool attempt_running(const char *name)
{
	for (struct attempt *a = attempts; a; a = a->next)
		if (!strcmp(a->name, name))
			return true;
	return false;
}

static void try_address(struct service *entry)
{
	int fd = socket(entry->target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		entry->accepting = false;
		return;
	}
	if (connect(fd, (struct sockaddr *)&entry->target, entry->target_length) != 0 &&
	    errno != EINPROGRESS) {
		close(fd);
		entry->accepting = false;
		return;
	}
	struct attempt *attempt = xcalloc(1, sizeof *attempt);
	attempt->name = xstrdup(entry->name);
	attempt->fd = fd;
	attempt->writable = event_new(loop, fd, EV_WRITE, on_attempt_writable, attempt);
	struct timeval limit = {.tv_sec = 1};
	event_add(attempt->writable, &limit);
	attempt->next = attempts;
	attempts = attempt;
}

static void try_waited_addresses(void)
{
	for (struct services_waiter *w = waiters; w; w = w->next) {
		struct service *entry = services_find(services_current(), w->name);
		if (entry && entry->mode == SERVICE_EXTERNAL && !attempt_running(entry->name))
			try_address(entry);
	}
}

/* ---- the timer ---- */

static bool watch_needed(void)
{
	if (waiters)
		return true;
	struct services_table *table = services_current();
	for (size_t i = 0; i < table->count; i++)
		if (table->entries[i].mode == SERVICE_BOX)
			return true;
	return false;
}

static void look(void)
{
	look_at_listeners();
	try_waited_addresses();
	answer_waiters(NULL);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what, (void)arg;
	look();
	if (!watch_needed())
		event_del(tick);
}

static void start_watching(void)
{
	if (watch_needed() && !event_pending(tick, EV_TIMEOUT, NULL)) {
		struct timeval period = {.tv_usec = READY_POLL_MS * 1000};
		event_add(tick, &period);
	} else if (!watch_needed()) {
		event_del(tick);
	}
}

void services_ready_update(void)
{
	look();
	start_watching();
}

struct services_waiter *services_wait(const char *name, int timeout_ms, services_wait_fn done,
				      void *arg)
{
	look_at_listeners();
	struct service *entry = services_find(services_current(), name);
	if (!entry || services_listening(entry)) {
		done(arg, false);
		return NULL;
	}
	struct services_waiter *waiter = xcalloc(1, sizeof *waiter);
	waiter->name = xstrdup(name);
	waiter->deadline_ms = clock_monotonic_ms() + timeout_ms;
	waiter->done = done;
	waiter->arg = arg;
	waiter->next = waiters;
	waiters = waiter;
	try_waited_addresses();
	start_watching();
	return waiter;
}

void services_wait_cancel(struct services_waiter *waiter)
{
	for (struct services_waiter **p = &waiters; *p; p = &(*p)->next)
		if (*p == waiter) {
			*p = waiter->next;
			free(waiter->name);
			free(waiter);
			return;
		}
}

void services_ready_init(struct event_base *base)
{
	loop = base;
	tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
}

void services_ready_stop(void)
{
	while (waiters)
		finish(waiters, true);
	while (attempts)
		end_attempt(attempts, false);
	if (tick)
		event_free(tick);
	tick = NULL;
}
