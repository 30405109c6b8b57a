/* shim-keep.c: `boxd-shim --keep-cgroup`, the one process of
 * boxd-commands.service.
 *
 * systemd keeps a unit's cgroup only while something runs in it (a unit
 * with no process has none), and the commands' cgroups must hang below a
 * cgroup that holds no process of its own, so that boxd may enable the
 * memory, pids and cpu controllers there (cgroup v2's no-internal-processes
 * rule). This keeper moves itself into the leaf `keeper` of the cgroup
 * systemd started it in, tells systemd it is ready (Type=notify, so boxd,
 * ordered after the unit, never sees the root occupied), and sleeps until
 * SIGTERM. A command cannot signal it: its executable is boxd-shim, which
 * the shims' signal guard protects. See docs/confinement.md. */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cgroup.h"
#include "shim.h"
#include "xalloc.h"

static void notify_ready(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un address = {.sun_family = AF_UNIX};
	if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof address.sun_path)
		return;
	memcpy(address.sun_path, path, strlen(path));
	socklen_t length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	if (path[0] == '@')
		address.sun_path[0] = '\0'; /* an abstract socket */
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	static const char ready[] = "READY=1\nSTATUS=holding the commands' cgroup";
	if (sendto(fd, ready, sizeof ready - 1, MSG_NOSIGNAL, (struct sockaddr *)&address, length) <
	    0)
		fprintf(stderr, "boxd-shim: cannot notify systemd: %s\n", strerror(errno));
	close(fd);
}

int keep_cgroup(void)
{
	sigset_t wanted;
	sigemptyset(&wanted);
	sigaddset(&wanted, SIGTERM);
	sigaddset(&wanted, SIGINT);
	sigprocmask(SIG_BLOCK, &wanted, NULL);
	struct cgroup_host host;
	if (!cgroup_discover(&host) || !host.v2_mount) {
		fprintf(stderr, "boxd-shim: no cgroup v2 to keep\n");
		return 1;
	}
	const char *self = strcmp(host.v2_self, "/") ? host.v2_self : "";
	char *leaf = xasprintf("%s%s/keeper", host.v2_mount, self);
	if (strcmp(strrchr(self, '/') ? strrchr(self, '/') : "", "/keeper") != 0 &&
	    ((mkdir(leaf, 0755) != 0 && errno != EEXIST) || !cgroup_move(leaf, getpid()))) {
		fprintf(stderr, "boxd-shim: cannot move into %s: %s\n", leaf, strerror(errno));
		free(leaf);
		cgroup_host_free(&host);
		return 1;
	}
	free(leaf);
	cgroup_host_free(&host);
	notify_ready();
	int signal;
	sigwait(&wanted, &signal);
	return 0;
}
