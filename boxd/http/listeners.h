/* listeners.h: the sockets boxd serves on, and who may connect to them.
 *
 * The unix socket admits peers whose uid (SO_PEERCRED) is 0 or boxd's own;
 * vsock admits the host (CID 2) and any CID added with --vsock-allow-cid.
 * Everyone else is closed at accept, before a byte of theirs is read: the
 * server (server.c) asks listeners_peer_allowed() about each accepted peer,
 * with the address accept gave (a sockaddr_vm for vsock, used as it is). */
#ifndef BOXD_LISTENERS_H
#define BOXD_LISTENERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Binds a listening unix socket at `path` with mode 0600, removing a stale
 * socket file left by a dead boxd (but refusing when one still answers).
 * Returns the fd, or -1 with a sentence in `error`. */
int listeners_open_unix(const char *path, char *error, size_t error_size);

/* Binds a listening vsock socket on `port` for any local CID. Returns the fd,
 * or -1 with a sentence in `error` (no vsock device is a normal case). */
int listeners_open_vsock(unsigned port, char *error, size_t error_size);

/* Guards a listening socket: from now on accepted peers are checked. */
void listeners_guard_unix(int listen_fd);
void listeners_guard_vsock(int listen_fd, const unsigned *allowed_cids, int count);
void listeners_unguard(int listen_fd);

/* The policies, exposed for unit tests. */
bool listeners_uid_allowed(uid_t peer_uid, uid_t own_uid);
bool listeners_cid_allowed(unsigned peer_cid, const unsigned *allowed_cids, int count);

/* Whether the peer just accepted on `listen_fd` (a guarded listener) as
 * `connection`, from `peer` (what accept gave), may talk to boxd. A refusal
 * is logged; the caller closes the connection. */
bool listeners_peer_allowed(int listen_fd, int connection, const struct sockaddr *peer,
			    socklen_t length);

#endif
