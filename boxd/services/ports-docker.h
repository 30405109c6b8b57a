/* ports-docker.h: the names and published ports of Docker's containers, for
 * GET /v1/ports: one GET /containers/json to the Docker Engine API on its
 * unix socket, through probe.h, so the loop never waits for Docker (a Docker
 * that does not answer within PORTS_DOCKER_TIMEOUT_MS leaves the containers
 * without names). */
#ifndef BOXD_PORTS_DOCKER_H
#define BOXD_PORTS_DOCKER_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;

#define PORTS_DOCKER_SOCKET "/var/run/docker.sock"
#define PORTS_DOCKER_TIMEOUT_MS 2000

struct docker_port {
	unsigned container_port; /* PrivatePort */
	unsigned host_port;      /* PublicPort */
};

struct docker_container {
	char *id;                  /* 64 hex digits */
	char *name;                /* the first of Names, without its leading '/' */
	struct docker_port *ports; /* TCP ports published on the host */
	size_t port_count;
};

struct docker_containers {
	struct docker_container *items;
	size_t count;
};

/* `containers` is NULL when Docker could not be asked (no socket, no
 * answer, an answer that is not the list); valid during the call. */
typedef void (*ports_docker_fn)(void *arg, const struct docker_containers *containers);
/* Asks Docker for its running containers; `done` runs once, later, on the
 * loop (not at all if boxd shuts down first: probe_cancel_all()). */
void ports_docker_list(struct event_base *base, ports_docker_fn done, void *arg);

/* The container with id `id` (64 hex digits), or NULL. */
const struct docker_container *ports_docker_find(const struct docker_containers *containers,
						 const char *id);
/* The host port published for the container's TCP `port`, 0 when none. */
unsigned ports_docker_host_port(const struct docker_container *container, unsigned port);

/* ---- pure parts, for the unit test ---- */

/* Docker's HTTP answer (head and body) to GET /containers/json: false when
 * it is not a 200 with a JSON array. Fills `containers` (free with
 * ports_docker_free). */
bool ports_docker_parse(const char *answer, size_t length, struct docker_containers *containers);
void ports_docker_free(struct docker_containers *containers);

#endif
