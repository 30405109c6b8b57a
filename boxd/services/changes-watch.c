/* changes-watch.c: the work dir watched with inotify, for the changes
 * journal (docs/changes.md, "Watching").
 *
 * One watch per folder, two maps (watch descriptor -> folder, path ->
 * folder). The first walk runs in slices of a few ms at the loop's lowest
 * priority, so boxd answers while it goes; a folder that appears later is
 * watched first and then read, and what the read finds is created (what was
 * made before the watch came). A lost event (queue overflow) or a full watch
 * table makes every cursor handed out so far answer `all`, and the tree is
 * walked again from nothing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "changes-internal.h"
#include "clock.h"
#include "log.h"
#include "path-map.h"
#include "xalloc.h"

#define WATCH_MASK                                                                     \
	(IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | \
	 IN_DONT_FOLLOW | IN_ONLYDIR | IN_EXCL_UNLINK)
#define SLICE_US 5000          /* one slice of the walk */
#define READS_PER_TURN 16      /* reads of events before the loop's other work has a turn */
#define SLICE_PRIORITY 2       /* the lowest of main.c's three */
#define RETRY_FULL_SEC 30      /* a full watch table: try again after this, */
#define RETRY_FULL_MAX_SEC 600 /* doubling up to this */

struct dir {
	int wd;
	char *path; /* relative to the work dir; "" is the work dir */
};

struct pending {
	char *path;
	bool emit; /* what is found was created (a new folder), not already there */
	struct pending *next;
};

static struct {
	struct event_base *base;
	char *work_dir;
	int work_fd, fd;
	struct event *readable, *slice, *retry;
	struct path_map *by_wd, *by_path;
	struct pending *head, *tail; /* folders to read */
	size_t walking;              /* of those, the first walk's (not new folders) */
	bool full;                   /* a watch could not be added: incomplete */
	int retry_sec;               /* the next wait for room in the watch table */
	int64_t walk_started_us;     /* 0 once the walk has ended */
	/* A rename's first half, until its second (same cookie) or none. */
	uint32_t cookie;
	char *moved_from;
	bool moved_dir;
	char buffer[64 << 10] __attribute__((aligned(__alignof__(struct inotify_event))));
} watch = {.work_fd = -1, .fd = -1};

static void start_over(void);

/* ---- paths and folders ---- */

static char *join(const char *folder, const char *name)
{
	return *folder ? xasprintf("%s/%s", folder, name) : xstrdup(name);
}

static enum change_type type_of(const char *path, bool is_dir)
{
	struct stat st;
	if (fstatat(watch.work_fd, *path ? path : ".", &st, AT_SYMLINK_NOFOLLOW) != 0)
		return is_dir ? CHANGE_DIR : CHANGE_FILE;
	return S_ISDIR(st.st_mode) ? CHANGE_DIR : S_ISLNK(st.st_mode) ? CHANGE_LINK : CHANGE_FILE;
}

static void dir_forget(struct dir *dir)
{
	if (path_map_get(watch.by_wd, &dir->wd, sizeof dir->wd) == dir)
		path_map_remove(watch.by_wd, &dir->wd, sizeof dir->wd);
	if (path_map_get_str(watch.by_path, dir->path) == dir)
		path_map_remove_str(watch.by_path, dir->path);
	free(dir->path);
	free(dir);
}

static void dir_set_path(struct dir *dir, const char *path)
{
	if (path_map_get_str(watch.by_path, dir->path) == dir)
		path_map_remove_str(watch.by_path, dir->path);
	free(dir->path);
	dir->path = xstrdup(path);
	path_map_put_str(watch.by_path, dir->path, dir);
}

static void retry_later(void)
{
	struct timeval later = {watch.retry_sec, 0};
	event_add(watch.retry, &later);
	watch.retry_sec =
		watch.retry_sec * 2 > RETRY_FULL_MAX_SEC ? RETRY_FULL_MAX_SEC : watch.retry_sec * 2;
}

static void watch_full(void)
{
	if (!watch.full)
		log_msg(LOG_LEVEL_WARNING,
			"changes: the inotify watch table is full (fs.inotify.max_user_watches); "
			"changes answer all: true until it has room");
	watch.full = true;
	journal_lost();
	/* The watch table is the user's too (a dev server, a test runner in
	 * watch mode): boxd gives its watches back at once, outside the walk
	 * that ran out, rather than hold the table full until it has room. */
	struct timeval now = {0, 0};
	if (watch.fd >= 0)
		event_add(watch.retry, &now);
	else
		retry_later();
}

/* Watches the folder at `path`; false when it is gone or not a folder. */
static bool watch_dir(const char *path)
{
	char *full = join(watch.work_dir, path);
	int wd = inotify_add_watch(watch.fd, *path ? full : watch.work_dir, WATCH_MASK);
	free(full);
	if (wd < 0) {
		if (errno == ENOSPC)
			watch_full();
		return false;
	}
	struct dir *dir = path_map_get(watch.by_wd, &wd, sizeof wd);
	if (dir) { /* already watched (the same folder, reached again) */
		if (strcmp(dir->path, path) != 0)
			dir_set_path(dir, path);
		return true;
	}
	struct dir *stale = path_map_get_str(watch.by_path, path);
	if (stale)
		path_map_remove_str(watch.by_path, path); /* its own IGNORED frees it */
	dir = xcalloc(1, sizeof *dir);
	dir->wd = wd;
	dir->path = xstrdup(path);
	path_map_put(watch.by_wd, &dir->wd, sizeof dir->wd, dir);
	path_map_put_str(watch.by_path, dir->path, dir);
	return true;
}

/* Stops watching the folder at `path` and every folder below it. */
static void unwatch_subtree(const char *path)
{
	size_t count = path_map_count(watch.by_path), length = strlen(path);
	struct dir **dirs = (struct dir **)path_map_values(watch.by_path);
	for (size_t i = 0; i < count; i++) {
		const char *at = dirs[i]->path;
		if (strncmp(at, path, length) == 0 && (!at[length] || at[length] == '/')) {
			inotify_rm_watch(watch.fd, dirs[i]->wd);
			dir_forget(dirs[i]);
		}
	}
	free(dirs);
}

/* A watched folder renamed: every folder below it has a new path too. */
static void rename_subtree(const char *from, const char *to)
{
	size_t count = path_map_count(watch.by_path), length = strlen(from);
	struct dir **dirs = (struct dir **)path_map_values(watch.by_path);
	for (size_t i = 0; i < count; i++) {
		const char *at = dirs[i]->path;
		if (strncmp(at, from, length) != 0 || (at[length] && at[length] != '/'))
			continue;
		char *moved = xasprintf("%s%s", to, at + length);
		dir_set_path(dirs[i], moved);
		free(moved);
	}
	free(dirs);
}

/* ---- reading folders ---- */

static void push(const char *path, bool emit)
{
	struct pending *item = xcalloc(1, sizeof *item);
	item->path = xstrdup(path);
	item->emit = emit;
	if (watch.tail)
		watch.tail->next = item;
	else
		watch.head = item;
	watch.tail = item;
	if (!emit)
		watch.walking++;
	event_active(watch.slice, 0, 0);
}

static void read_folder(const struct pending *item)
{
	if (!watch_dir(item->path))
		return;
	int fd = openat(watch.work_fd, *item->path ? item->path : ".",
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;
	}
	for (struct dirent *child; (child = readdir(dir)) != NULL;) {
		if (!strcmp(child->d_name, ".") || !strcmp(child->d_name, ".."))
			continue;
		char *path = join(item->path, child->d_name);
		enum change_type type = child->d_type == DT_DIR       ? CHANGE_DIR
					: child->d_type == DT_LNK     ? CHANGE_LINK
					: child->d_type == DT_UNKNOWN ? type_of(path, false)
								      : CHANGE_FILE;
		if (item->emit)
			journal_record(CHANGE_CREATED, type, path, NULL);
		if (type == CHANGE_DIR)
			push(path, item->emit);
		free(path);
	}
	closedir(dir);
}

/* Reads the next folder waiting; false when none waits. */
static bool read_next(void)
{
	struct pending *item = watch.head;
	if (!item)
		return false;
	watch.head = item->next;
	if (!watch.head)
		watch.tail = NULL;
	if (!item->emit)
		watch.walking--;
	read_folder(item);
	free(item->path);
	free(item);
	return true;
}

static void walk_ended(void)
{
	if (watch.head || watch.full)
		return;
	journal_complete();
	watch.retry_sec = RETRY_FULL_SEC;
	if (!watch.walk_started_us)
		return;
	struct changes_stats stats;
	changes_stats(&stats);
	log_msg(LOG_LEVEL_INFO,
		"changes: watching %zu folders under %s (walked in %.0f ms; %zu KiB of maps)",
		stats.watched_dirs, watch.work_dir,
		(double)(clock_monotonic_us() - watch.walk_started_us) / 1000.0,
		stats.watch_bytes >> 10);
	watch.walk_started_us = 0;
}

static void on_slice(evutil_socket_t fd, short what, void *arg)
{
	int64_t until = clock_monotonic_us() + SLICE_US;
	bool emitted = false;
	while (clock_monotonic_us() < until && watch.head) {
		emitted = emitted || watch.head->emit;
		read_next();
	}
	if (emitted)
		journal_flush();
	if (watch.head)
		event_active(watch.slice, 0, 0);
	else
		walk_ended();
}

/* ---- events ---- */

/* A rename's first half with no second: the thing left the work dir. */
static void moved_away(void)
{
	if (!watch.moved_from)
		return;
	enum change_type type = watch.moved_dir ? CHANGE_DIR : CHANGE_FILE;
	journal_record(CHANGE_REMOVED, type, watch.moved_from, NULL);
	if (watch.moved_dir)
		unwatch_subtree(watch.moved_from);
	free(watch.moved_from);
	watch.moved_from = NULL;
}

static void moved_in(const char *path, bool is_dir, uint32_t cookie)
{
	if (watch.moved_from && watch.cookie == cookie) {
		enum change_type type = is_dir ? CHANGE_DIR : type_of(path, false);
		journal_record(CHANGE_MOVED, type, path, watch.moved_from);
		if (is_dir) {
			if (path_map_get_str(watch.by_path, watch.moved_from))
				rename_subtree(watch.moved_from, path);
			else
				push(path, true); /* not read yet: what it holds is new */
		}
		free(watch.moved_from);
		watch.moved_from = NULL;
		return;
	}
	moved_away();
	/* From outside the work dir: new, with all it holds. */
	journal_record(CHANGE_CREATED, is_dir ? CHANGE_DIR : type_of(path, false), path, NULL);
	if (is_dir)
		push(path, true);
}

static void handle(const struct inotify_event *event)
{
	if (event->mask & IN_Q_OVERFLOW) {
		journal_lost();
		start_over();
		return;
	}
	struct dir *dir = path_map_get(watch.by_wd, &event->wd, sizeof event->wd);
	if (!dir)
		return;
	if (event->mask & IN_IGNORED) {
		dir_forget(dir);
		return;
	}
	if (!event->len)
		return; /* the folder's own events: its parent tells them */
	bool is_dir = event->mask & IN_ISDIR;
	if (watch.moved_from && !(event->mask & IN_MOVED_TO))
		moved_away();
	char *path = join(dir->path, event->name);
	if (event->mask & IN_CREATE) {
		journal_record(CHANGE_CREATED, is_dir ? CHANGE_DIR : type_of(path, false), path,
			       NULL);
		if (is_dir)
			push(path, true);
	} else if (event->mask & IN_DELETE) {
		journal_record(CHANGE_REMOVED, is_dir ? CHANGE_DIR : CHANGE_FILE, path, NULL);
	} else if (event->mask & (IN_MODIFY | IN_ATTRIB)) {
		journal_record(CHANGE_MODIFIED, is_dir ? CHANGE_DIR : type_of(path, false), path,
			       NULL);
	} else if (event->mask & IN_MOVED_FROM) {
		watch.moved_from = path;
		watch.moved_dir = is_dir;
		watch.cookie = event->cookie;
		return;
	} else if (event->mask & IN_MOVED_TO) {
		moved_in(path, is_dir, event->cookie);
	}
	free(path);
}

/* Reads what the kernel has queued, at most `reads` times; true when all
 * was read. A rename's first half at the very end has no second: rename()
 * queues both halves before it returns. */
static bool drain(int reads)
{
	for (int i = 0; i < reads; i++) {
		int fd = watch.fd;
		ssize_t got = read(fd, watch.buffer, sizeof watch.buffer);
		if (got <= 0) {
			moved_away();
			return true;
		}
		for (ssize_t at = 0; at < got && fd == watch.fd;) {
			const struct inotify_event *event = (const void *)(watch.buffer + at);
			handle(event);
			at += (ssize_t)(sizeof *event + event->len);
		}
	}
	return false;
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
	drain(READS_PER_TURN);
	journal_flush();
}

/* Before an answer: what happened before the request is in the journal
 * (the kernel queued it before the caller's call returned), and new
 * folders are read. The first walk goes on in its slices: until it ends,
 * answers are `all`. */
void watch_settle(void)
{
	if (watch.fd < 0)
		return;
	while (!drain(READS_PER_TURN))
		;
	while (watch.head && watch.head->emit)
		read_next();
}

/* ---- start, overflow, stop ---- */

static void forget_all(void)
{
	if (watch.readable)
		event_free(watch.readable);
	watch.readable = NULL;
	if (watch.fd >= 0)
		close(watch.fd);
	watch.fd = -1;
	size_t count = path_map_count(watch.by_wd);
	struct dir **dirs = (struct dir **)path_map_values(watch.by_wd);
	for (size_t i = 0; i < count; i++)
		dir_forget(dirs[i]);
	free(dirs);
	path_map_clear(watch.by_path);
	while (watch.head) {
		struct pending *item = watch.head;
		watch.head = item->next;
		free(item->path);
		free(item);
	}
	watch.tail = NULL;
	watch.walking = 0;
	free(watch.moved_from);
	watch.moved_from = NULL;
}

/* A new inotify instance (an overflowed queue holds nothing worth reading)
 * and the whole tree walked again. */
static void start_over(void)
{
	forget_all();
	watch.full = false;
	watch.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (watch.fd < 0) {
		log_msg(LOG_LEVEL_ERROR, "changes: no inotify instance: %s", strerror(errno));
		watch_full();
		return;
	}
	watch.readable = event_new(watch.base, watch.fd, EV_READ | EV_PERSIST, on_readable, NULL);
	event_add(watch.readable, NULL);
	watch.walk_started_us = clock_monotonic_us();
	push("", false);
}

/* A full table: first the watches are given back, later a new walk. */
static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	if (!watch.full)
		return;
	if (watch.fd >= 0) {
		forget_all();
		retry_later();
		return;
	}
	start_over();
}

void watch_start(struct event_base *base, const char *work_dir)
{
	watch.base = base;
	watch.work_dir = xstrdup(work_dir);
	watch.work_fd = open(work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	watch.by_wd = path_map_new();
	watch.by_path = path_map_new();
	watch.slice = event_new(base, -1, 0, on_slice, NULL);
	event_priority_set(watch.slice, SLICE_PRIORITY);
	watch.retry = evtimer_new(base, on_retry, NULL);
	watch.retry_sec = RETRY_FULL_SEC;
	if (watch.work_fd < 0) {
		log_msg(LOG_LEVEL_ERROR, "changes: cannot open the work dir %s: %s", work_dir,
			strerror(errno));
		return;
	}
	start_over();
}

void watch_stop(void)
{
	if (!watch.base)
		return;
	forget_all();
	event_free(watch.slice);
	event_free(watch.retry);
	path_map_free(watch.by_wd);
	path_map_free(watch.by_path);
	if (watch.work_fd >= 0)
		close(watch.work_fd);
	free(watch.work_dir);
	memset(&watch, 0, sizeof watch);
	watch.work_fd = watch.fd = -1;
}

void watch_stats(struct changes_stats *stats)
{
	stats->watched_dirs = path_map_count(watch.by_wd);
	stats->watch_bytes = path_map_bytes(watch.by_wd) + path_map_bytes(watch.by_path) +
			     stats->watched_dirs * (sizeof(struct dir) + 16);
}
