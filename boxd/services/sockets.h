/* sockets.h: the box's listening TCP sockets, as the kernel lists them
 * (NETLINK_SOCK_DIAG, both families), without blocking: one dump is a few
 * tens of microseconds. Used by the services' readiness (is targetPort
 * listening, and on which address) and by GET /v1/ports. */
#ifndef BOXD_SOCKETS_H
#define BOXD_SOCKETS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

struct listen_socket {
	int family;                     /* AF_INET or AF_INET6 */
	char address[INET6_ADDRSTRLEN]; /* "127.0.0.1", "::1", "0.0.0.0", "::" */
	unsigned port;
	unsigned long inode; /* matches /proc/PID/fd/N -> socket:[inode] */
	bool v6only;         /* AF_INET6 "::" that does not take IPv4 */
};

/* Every listening TCP socket of the calling thread's network namespace, in
 * a malloc'd array (*sockets, caller frees) of *count. False with errno when
 * the kernel refuses the dump. */
bool sockets_listening(struct listen_socket **sockets, size_t *count);

/* How `port` listens among `sockets`: LISTEN_V4 when IPv4 connections to
 * 127.0.0.1 reach it (0.0.0.0, 127.0.0.1, or a dual-stack "::"), else
 * LISTEN_V6_LOOPBACK when only ::1 (or a v6only "::") does, else LISTEN_NONE. */
enum listen_reach { LISTEN_NONE, LISTEN_V4, LISTEN_V6_LOOPBACK };
enum listen_reach sockets_reach(const struct listen_socket *sockets, size_t count, unsigned port);

#endif
