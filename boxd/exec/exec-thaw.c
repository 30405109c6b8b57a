/* exec-thaw.c: the shims' cgroup is never left frozen.
 *
 * Every shim (and the spare maker) lives in one cgroup; a command writing 1
 * to its cgroup.freeze, or to that of the commands' cgroup above it, would
 * stop every timeout and every new command while boxd itself (in a cgroup
 * of its own) answered health as if all were well. The kernel says when
 * the cgroup's effective state changes, its own freeze or an ancestor's
 * (cgroup.events, "frozen", a modify event for inotify): boxd then writes 0
 * to the cgroup.freeze of the shims' cgroup and of each ancestor up to the
 * commands' cgroup, and logs who was thawed. No polling: an idle boxd is
 * woken only by the kernel's event. */
#include "exec-thaw.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "cgroup.h"
#include "log.h"
#include "xalloc.h"

static struct event *watch_event;
static int watch_fd = -1;
static char *shims_dir, *top_dir;

static void thaw_one(const char *dir)
{
	bool ok = cgroup_set_freeze(dir, false);
	int error = errno;
	if (ok)
		log_msg(LOG_LEVEL_WARNING,
			"%s was frozen (by a command?): thawed, so the shims keep "
			"their timeouts and start commands",
			dir);
	else
		log_msg(LOG_LEVEL_ERROR, "%s is frozen and cannot be thawed: %s", dir,
			strerror(error));
}

/* The shims' cgroup and each ancestor up to the commands' cgroup: every one
 * that froze itself is thawed (a freeze above that is the box's keeper's or
 * the host's business, not a command's). */
static void thaw_chain(void)
{
	if (cgroup_keyed_value(shims_dir, "cgroup.events", "frozen") != 1)
		return;
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", shims_dir);
	for (;;) {
		/* cgroup.freeze holds only the cgroup's own setting. */
		if (cgroup_freeze_setting(dir) == 1)
			thaw_one(dir);
		if (!strcmp(dir, top_dir))
			break;
		char *slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			break;
		*slash = '\0';
		if (!cgroup_dir_within(dir, top_dir))
			break;
	}
}

static bool add_watch(void)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/cgroup.events", shims_dir);
	return inotify_add_watch(watch_fd, path, IN_MODIFY) >= 0;
}

static void on_event(evutil_socket_t fd, short what, void *arg)
{
	char buffer[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool ignored = false;
	ssize_t n;
	while ((n = read(watch_fd, buffer, sizeof buffer)) > 0)
		for (char *at = buffer; at < buffer + n;) {
			const struct inotify_event *event = (const struct inotify_event *)at;
			if (event->mask & IN_IGNORED)
				ignored = true;
			at += sizeof *event + event->len;
		}
	if (ignored)
		exec_thaw_rearm(); /* the cgroup was removed: watched again once made */
	else
		thaw_chain();
}

void exec_thaw_init(struct event_base *base, const char *shims, const char *top)
{
	if (!shims || !top)
		return;
	watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (watch_fd < 0) {
		log_msg(LOG_LEVEL_WARNING, "cannot watch %s for a freeze: %s", shims,
			strerror(errno));
		return;
	}
	shims_dir = xstrdup(shims);
	top_dir = xstrdup(top);
	watch_event = event_new(base, watch_fd, EV_READ | EV_PERSIST, on_event, NULL);
	event_add(watch_event, NULL);
	exec_thaw_rearm();
}

void exec_thaw_rearm(void)
{
	if (watch_fd < 0 || !add_watch())
		return;
	/* A freeze from before (a boxd restarted by its watchdog) or from
	 * while the watch was away. */
	thaw_chain();
}

void exec_thaw_stop(void)
{
	if (watch_event)
		event_free(watch_event);
	watch_event = NULL;
	if (watch_fd >= 0)
		close(watch_fd);
	watch_fd = -1;
	free(shims_dir);
	free(top_dir);
	shims_dir = top_dir = NULL;
}
