/* listeners.h: the sockets boxd serves on, and who may connect to them.
 *
 * The unix socket admits peers whose uid (SO_PEERCRED) is 0 or boxd's own;
 * vsock admits the host (CID 2) and any CID added with --vsock-allow-cid.
 * Everyone else is closed at accept, before evhttp sees a byte.
 *
 * How: libevent's listeners call accept4(2). boxd defines accept4 (see
 * listeners.c) so that on a guarded listening socket each accepted peer is
 * checked first. The same hook presents vsock peers to evhttp as unnamed
 * AF_UNIX addresses: evhttp 2.1 calls getnameinfo() on every peer and exits
 * the process when that fails, which it does for AF_VSOCK, and libevent's
 * bufferevents abort on any address longer than a sockaddr_in6. */
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

/* What evhttp is told about an accepted peer: a vsock peer becomes an
 * unnamed AF_UNIX address (the family alone, 2 bytes), which glibc's
 * getnameinfo() can name and libevent can store; others pass unchanged.
 * Copies at most *address_length bytes, like accept4. */
struct sockaddr;
struct sockaddr_storage;
void listeners_present_peer(const struct sockaddr_storage *peer, socklen_t length,
			    struct sockaddr *address, socklen_t *address_length);

#endif
