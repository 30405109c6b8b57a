/* ports.c: GET /v1/ports's answer (ports.h).
 *
 * A listing is a round: the box's listeners from sock_diag on the loop (a
 * few tens of microseconds, and sockets.c's buffer is the loop's), the
 * /proc walks on a thread of the round's own (offload.h), Docker's names
 * through the loop, then the answer. The thread touches nothing but its
 * round (exec's jobs and the secrets are the loop's), and is joined before
 * the round is read. */
#include "ports.h"

#include <errno.h>
#include <event2/event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "cgroup.h"
#include "clock.h"
#include "exec.h"
#include "log.h"
#include "offload.h"
#include "ports-docker.h"
#include "ports-scan.h"
#include "protected.h"
#include "redact.h"
#include "sockets.h"
#include "utf8.h"
#include "xalloc.h"

struct waiter {
	ports_done_fn done;
	void *arg;
	struct waiter *next;
};

struct round {
	struct event_base *base;
	struct waiter *waiters;
	struct listen_socket *box; /* handed to the scan, which frees it */
	size_t box_count;
	struct ports_scan scan;
	int64_t scan_us; /* how long the scan took, for the log */
};

static struct round *running; /* at most one round at a time */
static struct waiter *queued; /* came while it ran: the next round's */

static void start_round(struct event_base *base, struct waiter *waiters);

/* ---- the answer ---- */

/* Every waiter gets the answer (a copy each but the last), or the error. */
static void answer_all(struct waiter *waiters, cJSON *answer, const char *error)
{
	if (!waiters)
		cJSON_Delete(answer);
	while (waiters) {
		struct waiter *waiter = waiters;
		waiters = waiter->next;
		cJSON *own = answer && waiters ? cJSON_Duplicate(answer, true) : answer;
		waiter->done(waiter->arg, own, error);
		free(waiter);
	}
}

/* Masked before it is cut, so a secret that straddles the cut is masked
 * whole rather than shown in part. */
static char *shown_command(const char *command)
{
	char *masked = redact_text(command);
	if (strlen(masked) <= PORTS_COMMAND_MAX)
		return masked;
	size_t cut = utf8_prefix_length(masked, PORTS_COMMAND_MAX);
	char *shown = xasprintf("%.*s ...", (int)cut, masked);
	free(masked);
	return shown;
}

static bool has_ancestor(const struct ports_found *found, pid_t pid)
{
	for (size_t i = 0; i < found->ancestor_count; i++)
		if (found->ancestors[i] == pid)
			return true;
	return false;
}

/* The command of boxd's that started the holder: the one whose cgroup holds
 * it (or a cgroup it made below its own), which is how exec keeps a
 * command's whole tree; else, for commands without a cgroup (--cgroup off,
 * no cgroup2), the running one whose shim is among its parents: a shim is
 * its command's subreaper, so even a daemon that double-forked and left
 * the command's session is reparented to it. Only a running command's shim
 * is alive, so its pid names no other process. */
static const char *exec_id_of(const struct ports_found *found)
{
	for (struct exec_job *job = exec_first(); job; job = job->next)
		if (job->meta.cgroup && found->cgroup &&
		    cgroup_dir_within(found->cgroup, job->meta.cgroup))
			return job->id;
	for (struct exec_job *job = exec_first(); job; job = job->next)
		if (job->state == EXEC_RUNNING && job->meta.shim_pid > 0 &&
		    has_ancestor(found, job->meta.shim_pid))
			return job->id;
	return NULL;
}

/* A container on the box's own network listens on the box's port itself;
 * one on a network of its own is reached on the host port Docker
 * published for it, if any. */
static cJSON *container_json(const struct ports_found *found,
			     const struct docker_containers *docker)
{
	if (!found->container[0])
		return cJSON_CreateNull();
	const struct docker_container *known = ports_docker_find(docker, found->container);
	cJSON *container = cJSON_CreateObject();
	cJSON_AddStringToObject(container, "id", found->container);
	if (known && known->name)
		cJSON_AddStringToObject(container, "name", known->name);
	else
		cJSON_AddNullToObject(container, "name");
	unsigned host = found->in_box ? found->socket.port
				      : ports_docker_host_port(known, found->socket.port);
	if (host)
		cJSON_AddNumberToObject(container, "hostPort", host);
	else
		cJSON_AddNullToObject(container, "hostPort");
	return container;
}

static cJSON *port_json(const struct ports_found *found, const struct docker_containers *docker)
{
	cJSON *port = cJSON_CreateObject();
	cJSON_AddNumberToObject(port, "port", found->socket.port);
	cJSON_AddStringToObject(port, "address", found->socket.address);
	if (found->pid)
		cJSON_AddNumberToObject(port, "pid", found->pid);
	else
		cJSON_AddNullToObject(port, "pid");
	char *command = found->command ? shown_command(found->command) : NULL;
	if (command)
		cJSON_AddStringToObject(port, "command", command);
	else
		cJSON_AddNullToObject(port, "command");
	free(command);
	const char *exec_id = found->pid ? exec_id_of(found) : NULL;
	if (exec_id)
		cJSON_AddStringToObject(port, "execId", exec_id);
	else
		cJSON_AddNullToObject(port, "execId");
	cJSON_AddItemToObject(port, "container", container_json(found, docker));
	return port;
}

/* By port, the box's own first, IPv4 first, then by address. */
static int by_port(const void *a, const void *b)
{
	const struct ports_found *x = a, *y = b;
	if (x->socket.port != y->socket.port)
		return x->socket.port < y->socket.port ? -1 : 1;
	if (x->in_box != y->in_box)
		return x->in_box ? -1 : 1;
	if (x->socket.family != y->socket.family)
		return x->socket.family == AF_INET ? -1 : 1;
	return strcmp(x->socket.address, y->socket.address);
}

static void finish(struct round *round, const struct docker_containers *docker)
{
	struct ports_scan *scan = &round->scan;
	qsort(scan->found, scan->count, sizeof *scan->found, by_port);
	cJSON *answer = cJSON_CreateObject();
	cJSON *list = cJSON_AddArrayToObject(answer, "ports");
	for (size_t i = 0; i < scan->count; i++)
		cJSON_AddItemToArray(list, port_json(&scan->found[i], docker));
	struct waiter *waiters = round->waiters;
	struct event_base *base = round->base;
	ports_scan_free(scan);
	free(round);
	running = NULL;
	/* The calls that came during this round get a round of their own,
	 * which sees every listener that was there when they called. */
	if (queued) {
		struct waiter *next = queued;
		queued = NULL;
		start_round(base, next);
	}
	answer_all(waiters, answer, NULL);
}

static void on_docker(void *arg, const struct docker_containers *containers)
{
	finish(arg, containers);
}

/* Docker is asked only when a listener is in a container, and only when its
 * socket is there: a box without Docker costs nothing more. */
static bool wants_docker(const struct ports_scan *scan)
{
	struct stat info;
	for (size_t i = 0; i < scan->count; i++)
		if (scan->found[i].container[0])
			return stat(PORTS_DOCKER_SOCKET, &info) == 0;
	return false;
}

static void scanned(struct round *round)
{
	log_msg(LOG_LEVEL_DEBUG, "ports: %zu listeners, %zu processes, /proc read in %.1f ms",
		round->scan.count, round->scan.processes, (double)round->scan_us / 1000);
	if (wants_docker(&round->scan))
		ports_docker_list(round->base, on_docker, round);
	else
		finish(round, NULL);
}

/* ---- the scan's thread ---- */

static void scan(struct round *round)
{
	int64_t started = clock_monotonic_us();
	ports_scan_run(&round->scan, round->box, round->box_count);
	round->box = NULL;
	round->scan_us = clock_monotonic_us() - started;
}

/* offload_run's halves: the walk on the thread, its end on the loop. */
static void scan_work(void *arg)
{
	scan(arg);
}

static void scan_done(void *arg)
{
	scanned(arg);
}

static void start_round(struct event_base *base, struct waiter *waiters)
{
	struct round *round = xcalloc(1, sizeof *round);
	round->base = base;
	round->waiters = waiters;
	if (!sockets_listening(&round->box, &round->box_count)) {
		char error[160];
		snprintf(error, sizeof error, "cannot list the listening sockets: %s",
			 strerror(errno));
		free(round);
		answer_all(waiters, NULL, error);
		return;
	}
	running = round;
	protected_warm(); /* what the thread's cgroup lookups read */
	offload_run(base, "ports: the scan", scan_work, scan_done, round);
}

void ports_list(struct event_base *base, ports_done_fn done, void *arg)
{
	struct waiter *waiter = xcalloc(1, sizeof *waiter);
	waiter->done = done;
	waiter->arg = arg;
	if (running) {
		waiter->next = queued;
		queued = waiter;
		return;
	}
	start_round(base, waiter);
}
