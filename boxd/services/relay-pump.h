/* relay-pump.h: one connection the relay forwards: the connect to its
 * target, then the bytes copied both ways. Relay-thread only: every call
 * here runs on the relay's event_base, whose thread owns the scratch buffer
 * and the pipe the pumps share (relay.c is the only caller). */
#ifndef BOXD_RELAY_PUMP_H
#define BOXD_RELAY_PUMP_H

#include <stdbool.h>
#include <sys/socket.h>

struct event_base;

struct relay_target {
	struct sockaddr_storage address; /* AF_INET, AF_INET6 or AF_VSOCK */
	socklen_t length;
};

/* Called once when a pump has ended and closed both its sockets, with the
 * `ingress` it was started with (the relay's counters). */
typedef void relay_pump_closed_fn(bool ingress);

/* The thread's shared state: a scratch buffer, a pipe for splice(2). Once,
 * on the relay thread, before the first pump. */
void relay_pump_thread_begin(relay_pump_closed_fn *closed);
/* Cuts every pump still running (each closed as above), then frees the
 * shared state. */
void relay_pump_thread_end(void);

/* Forwards `client` (accepted, nonblocking; taken, closed by the pump) to
 * targets[0], or when that refuses, to the next one (`count` of them,
 * 1 or 2), within 10 s; then copies both ways until each side has closed
 * its sending half (passed on to the other side with shutdown) or either
 * fails. Ends with the closed callback, which may run before this
 * returns. */
void relay_pump_start(struct event_base *base, int client, const struct relay_target *targets,
		      int count, bool ingress);

#endif
