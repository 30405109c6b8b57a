#include "helpers.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "xalloc.h"

static char *executable_in(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);
	char resolved[PATH_MAX];
	if (realpath(path, resolved) && access(resolved, X_OK) == 0) {
		free(path);
		return xstrdup(resolved);
	}
	free(path);
	return NULL;
}

char *helper_path(const char *name)
{
	const char *override = getenv("BOXD_HELPER_DIR");
	char *found = override && *override ? executable_in(override, name) : NULL;
	if (found)
		return found;
	char self[PATH_MAX];
	ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
	if (length > 0) {
		self[length] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			found = executable_in(self, name);
			/* In the build tree each program has its own folder. */
			static const char *const build_folders[] = {"../shims", "screen",
								    "archive"};
			for (size_t i = 0;
			     !found && i < sizeof build_folders / sizeof *build_folders; i++) {
				char *folder = xasprintf("%s/%s", self, build_folders[i]);
				found = executable_in(folder, name);
				free(folder);
			}
			if (found)
				return found;
		}
	}
	return xasprintf("%s/%s", BOXD_LIBEXECDIR, name);
}

void helper_spawn_attributes(posix_spawnattr_t *attributes)
{
	posix_spawnattr_init(attributes);
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(attributes, &none);
	posix_spawnattr_setsigdefault(attributes, &all);
	posix_spawnattr_setflags(attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}

int helper_pidfd(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

int helper_reap(int pid_fd)
{
	siginfo_t info = {0};
	int status = -1;
	if (waitid(P_PIDFD, (id_t)pid_fd, &info, WEXITED | WNOHANG) == 0 && info.si_pid)
		status = info.si_code == CLD_EXITED ? info.si_status << 8 : (info.si_status & 0x7f);
	close(pid_fd);
	return status;
}

struct helper_exit_watch {
	int pid_fd; /* -1 when no pidfd could be opened: reported at once */
	struct event *event;
	helper_exited_fn exited;
	void *arg;
	struct helper_exit_watch *next;
};

/* Watches not fired yet, in one list: one place to find them, and still
 * reachable (not a leak) should boxd exit before a helper does. */
static struct helper_exit_watch *pending;

static void watch_free(struct helper_exit_watch *watch)
{
	struct helper_exit_watch **link = &pending;
	while (*link && *link != watch)
		link = &(*link)->next;
	if (*link)
		*link = watch->next;
	event_free(watch->event);
	free(watch);
}

static void on_exit_event(evutil_socket_t fd, short what, void *arg)
{
	struct helper_exit_watch *watch = arg;
	int status = -1;
	if (watch->pid_fd >= 0 && (what & EV_READ))
		status = helper_reap(watch->pid_fd);
	else if (watch->pid_fd >= 0)
		close(watch->pid_fd);
	helper_exited_fn exited = watch->exited;
	void *exited_arg = watch->arg;
	watch_free(watch);
	if (exited)
		exited(status, exited_arg);
}

struct helper_exit_watch *helper_watch_exit(struct event_base *base, pid_t pid, int timeout_ms,
					    helper_exited_fn exited, void *arg)
{
	struct helper_exit_watch *watch = xcalloc(1, sizeof *watch);
	watch->pid_fd = helper_pidfd(pid);
	watch->exited = exited;
	watch->arg = arg;
	struct timeval limit = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
	if (watch->pid_fd < 0) {
		watch->event = evtimer_new(base, on_exit_event, watch);
		limit = (struct timeval){0, 0};
		timeout_ms = 0;
	} else {
		watch->event = event_new(base, watch->pid_fd, EV_READ, on_exit_event, watch);
	}
	event_add(watch->event, timeout_ms >= 0 ? &limit : NULL);
	watch->next = pending;
	pending = watch;
	return watch;
}
