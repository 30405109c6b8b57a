#include "listeners.h"

#include <errno.h>
#include <linux/vm_sockets.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "text.h"

#define MAX_GUARDED 4

enum guard_kind { GUARD_UNIX, GUARD_VSOCK };

struct guard {
	int fd; /* -1: free slot */
	enum guard_kind kind;
	unsigned cids[CONFIG_MAX_ALLOWED_CIDS];
	int cid_count;
};

static struct guard guards[MAX_GUARDED] = {
	{.fd = -1},
	{.fd = -1},
	{.fd = -1},
	{.fd = -1},
};

bool listeners_uid_allowed(uid_t peer_uid, uid_t own_uid)
{
	return peer_uid == 0 || peer_uid == own_uid;
}

bool listeners_cid_allowed(unsigned peer_cid, const unsigned *allowed_cids, int count)
{
	for (int i = 0; i < count; i++) {
		if (allowed_cids[i] == peer_cid)
			return true;
	}
	return false;
}

static bool fill_unix_address(struct sockaddr_un *address, const char *path, char *error,
			      size_t error_size)
{
	memset(address, 0, sizeof *address);
	address->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof address->sun_path) {
		snprintf(error, error_size,
			 "socket path %s is longer than %zu bytes; pick a shorter --socket", path,
			 sizeof address->sun_path - 1);
		return false;
	}
	strcpy(address->sun_path, path);
	return true;
}

/* A socket file may be left by a boxd that died. Remove it only when nothing
 * answers on it, so a second boxd never steals a live one's socket. */
static bool clear_stale_socket(const struct sockaddr_un *address, char *error, size_t error_size)
{
	struct stat info;
	if (lstat(address->sun_path, &info) != 0)
		return true;
	if (!S_ISSOCK(info.st_mode)) {
		snprintf(error, error_size,
			 "%s exists and is not a socket; move it away or pick another --socket",
			 address->sun_path);
		return false;
	}
	/* A live boxd accepts every time; a socket a dead boxd left can still
	 * accept for a moment, held by a child caught between its fork and its
	 * exec when boxd was killed. So it must accept for half a second. */
	bool answered = true;
	for (int attempt = 0; attempt < 5 && answered; attempt++) {
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe < 0)
			return true;
		answered = connect(probe, (const struct sockaddr *)address, sizeof *address) == 0;
		close(probe);
		if (answered && attempt < 4)
			usleep(100000);
	}
	if (answered)
		return text_fail(error, error_size, "another boxd is already serving on %s",
				 address->sun_path);
	unlink(address->sun_path);
	return true;
}

int listeners_open_unix(const char *path, char *error, size_t error_size)
{
	struct sockaddr_un address, staging;
	if (!fill_unix_address(&address, path, error, error_size) ||
	    !clear_stale_socket(&address, error, error_size))
		return -1;
	/* Bound and listening under a staging name, then renamed into place:
	 * a client never finds a socket file that refuses it (between bind and
	 * listen), even when boxd makes a removed socket again. */
	char staged[sizeof staging.sun_path];
	int length = snprintf(staged, sizeof staged, "%s.%d.new", path, (int)getpid());
	bool staging_fits = length > 0 && (size_t)length < sizeof staged;
	if (!staging_fits || !fill_unix_address(&staging, staged, error, error_size))
		staging = address;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(error, error_size, "cannot create a unix socket: %s", strerror(errno));
		return -1;
	}
	unlink(staging.sun_path);
	/* The umask makes the socket 0600 from its first moment, not after a chmod. */
	mode_t old_mask = umask(0177);
	int bound = bind(fd, (struct sockaddr *)&staging, sizeof staging);
	umask(old_mask);
	if (bound != 0 || listen(fd, 1024) != 0 ||
	    (strcmp(staging.sun_path, address.sun_path) != 0 &&
	     rename(staging.sun_path, address.sun_path) != 0)) {
		snprintf(error, error_size, "cannot listen on %s: %s", path, strerror(errno));
		unlink(staging.sun_path);
		close(fd);
		return -1;
	}
	return fd;
}

int listeners_open_vsock(unsigned port, char *error, size_t error_size)
{
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(error, error_size, "no vsock here (%s); serving on the unix socket only",
			 strerror(errno));
		return -1;
	}
	struct sockaddr_vm address = {
		.svm_family = AF_VSOCK,
		.svm_cid = VMADDR_CID_ANY,
		.svm_port = port,
	};
	if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0 || listen(fd, 1024) != 0) {
		snprintf(error, error_size,
			 "cannot listen on vsock port %u (%s); serving on the unix socket only",
			 port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static struct guard *guard_slot(int fd)
{
	for (int i = 0; i < MAX_GUARDED; i++) {
		if (guards[i].fd == fd)
			return &guards[i];
	}
	return NULL;
}

static struct guard *guard_add(int fd, enum guard_kind kind)
{
	struct guard *guard = guard_slot(-1);
	if (!guard) {
		log_msg(LOG_LEVEL_ERROR,
			"more than %d listeners guarded; refusing to serve an unchecked one",
			MAX_GUARDED);
		return NULL;
	}
	guard->fd = fd;
	guard->kind = kind;
	guard->cid_count = 0;
	return guard;
}

void listeners_guard_unix(int listen_fd)
{
	guard_add(listen_fd, GUARD_UNIX);
}

void listeners_guard_vsock(int listen_fd, const unsigned *allowed_cids, int count)
{
	struct guard *guard = guard_add(listen_fd, GUARD_VSOCK);
	if (!guard)
		return;
	if (count > CONFIG_MAX_ALLOWED_CIDS)
		count = CONFIG_MAX_ALLOWED_CIDS;
	memcpy(guard->cids, allowed_cids, (size_t)count * sizeof *allowed_cids);
	guard->cid_count = count;
}

void listeners_unguard(int listen_fd)
{
	struct guard *guard = guard_slot(listen_fd);
	if (guard)
		guard->fd = -1;
}

static bool peer_allowed(const struct guard *guard, int connection,
			 const struct sockaddr_storage *peer)
{
	if (guard->kind == GUARD_UNIX) {
		struct ucred credentials;
		socklen_t length = sizeof credentials;
		if (getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0)
			return false;
		if (listeners_uid_allowed(credentials.uid, geteuid()))
			return true;
		log_msg(LOG_LEVEL_WARNING,
			"refused a unix socket peer with uid %u (pid %d): only root or boxd's own "
			"uid may connect",
			(unsigned)credentials.uid, (int)credentials.pid);
		return false;
	}
	const struct sockaddr_vm *vm = (const struct sockaddr_vm *)peer;
	if (vm->svm_family == AF_VSOCK &&
	    listeners_cid_allowed(vm->svm_cid, guard->cids, guard->cid_count))
		return true;
	log_msg(LOG_LEVEL_WARNING,
		"refused a vsock peer with CID %u: only the host (CID 2) and --vsock-allow-cid may "
		"connect",
		vm->svm_family == AF_VSOCK ? vm->svm_cid : 0);
	return false;
}

bool listeners_peer_allowed(int listen_fd, int connection, const struct sockaddr *peer,
			    socklen_t length)
{
	const struct guard *guard = guard_slot(listen_fd);
	if (!guard || listen_fd < 0) {
		log_msg(LOG_LEVEL_ERROR, "a connection on an unguarded listener was refused");
		return false;
	}
	struct sockaddr_storage address;
	memset(&address, 0, sizeof address);
	memcpy(&address, peer, length < sizeof address ? length : sizeof address);
	return peer_allowed(guard, connection, &address);
}
