/* ports-scan.h: the blocking half of GET /v1/ports (ports.h is the other):
 * who holds each listening socket, read from /proc.
 *
 * It reads files only (no loop, no exec state, no secrets), so ports.c runs
 * it on a thread of its own: a box with a few hundred processes costs a few
 * tens of milliseconds of /proc reads (docs/api.md, "Ports"), which the loop
 * must not wait for. Nothing here is masked: ports.c masks on the loop,
 * where the secrets live. */
#ifndef BOXD_PORTS_SCAN_H
#define BOXD_PORTS_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sockets.h"

/* A Docker container id: 64 hex digits. */
#define PORTS_CONTAINER_ID_LENGTH 64
/* How much of a command line is read: enough that a secret (or an encoded
 * form of one, 64 KiB at most) starting within what is shown is read whole,
 * so ports.c masks it before cutting. */
#define PORTS_CMDLINE_READ_MAX (128 * 1024)
/* How far up the parent chain a listener's ancestors are kept. */
#define PORTS_ANCESTORS_MAX 64

struct ports_found {
	struct listen_socket socket;
	bool in_box;   /* in the box's own network namespace, else a container's */
	pid_t pid;     /* the process holding it (the lowest pid of several); 0: none found */
	char *command; /* its command line, arguments joined by spaces, "[comm]"
			* when it has none (a kernel thread); not masked; NULL */
	char *cgroup;  /* its cgroup v2 dir, mount point included, or NULL */
	/* The container it listens in ("": none): the holder's container, else
	 * the one whose network namespace it is in. */
	char container[PORTS_CONTAINER_ID_LENGTH + 1];
	pid_t ancestors[PORTS_ANCESTORS_MAX]; /* parent, grandparent, ... up to pid 1 */
	size_t ancestor_count;
};

struct ports_scan {
	struct ports_found *found;
	size_t count;
	size_t processes; /* processes looked at, for the log's timing line */
};

/* Fills `scan` from the box's own listeners `box` (sockets_listening(),
 * taken over: freed here) and those of every Docker container's network
 * namespace. Blocking; safe on any thread while nothing else calls it, once
 * protected_warm() has run. */
void ports_scan_run(struct ports_scan *scan, struct listen_socket *box, size_t box_count);
void ports_scan_free(struct ports_scan *scan);

/* ---- pure parts, for the unit test ---- */

/* One line of /proc/PID/net/tcp (AF_INET) or tcp6 (AF_INET6): true when it
 * is a listener (state 0A), filling `socket`. */
bool ports_parse_tcp_line(const char *line, int family, struct listen_socket *socket);
/* The Docker container id in a /proc/PID/cgroup text (a component
 * "docker-<64 hex>.scope", systemd's driver, or "<64 hex>" below "docker",
 * cgroupfs's), copied into `id`: false when there is none. */
bool ports_container_of_cgroup(const char *text, char id[PORTS_CONTAINER_ID_LENGTH + 1]);

#endif
