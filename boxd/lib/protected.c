#include "protected.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "io.h"

/* Field `index` of /proc/PID/stat counted after the command name (which may
 * hold spaces and parentheses): 0 is the state, 2 the process group, 19 the
 * start time. 0 when the process is gone. */
static uint64_t stat_field(pid_t pid, int index)
{
	char path[64], text[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, text, sizeof text - 1);
	close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	char *at = strrchr(text, ')');
	if (!at)
		return 0;
	at++;
	for (int field = 0; field <= index; field++) {
		at += strspn(at, " ");
		if (field == index)
			return strtoull(at, NULL, 10);
		at += strcspn(at, " ");
	}
	return 0;
}

uint64_t protected_start_time(pid_t pid)
{
	return pid > 0 ? stat_field(pid, 19) : 0;
}

pid_t protected_process_group(pid_t pid)
{
	return pid > 0 ? (pid_t)stat_field(pid, 2) : 0;
}

pid_t protected_parent(pid_t pid)
{
	return pid > 0 ? (pid_t)stat_field(pid, 1) : 0;
}

pid_t protected_thread_group(pid_t tid)
{
	char path[64], line[128];
	snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
	FILE *file = tid > 0 ? fopen(path, "re") : NULL;
	long tgid = 0;
	while (file && fgets(line, sizeof line, file))
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	if (file)
		fclose(file);
	return (pid_t)tgid;
}

/* Where cgroup v2 is mounted, looked up once a process (and inherited by
 * its forks): mountinfo is long in a box that runs containers, and every
 * spare shim adds itself. NULL while unknown. */
static char *v2_mount;

void protected_warm(void)
{
	if (v2_mount)
		return;
	struct cgroup_host host;
	if (cgroup_discover(&host) && host.v2_mount) {
		v2_mount = host.v2_mount;
		host.v2_mount = NULL;
	}
	cgroup_host_free(&host);
}

void protected_cgroup_of(pid_t pid, char *dir, size_t size)
{
	dir[0] = '\0';
	protected_warm();
	if (!v2_mount)
		return;
	char path[64], line[PATH_MAX];
	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
	FILE *file = fopen(path, "re");
	while (file && fgets(line, sizeof line, file)) {
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(dir, size, "%s%s", v2_mount, line + 3);
			break;
		}
	}
	if (file)
		fclose(file);
}

bool protected_add(const char *dir, pid_t pid)
{
	return protected_add_in(dir, pid, NULL);
}

bool protected_add_in(const char *dir, pid_t pid, const char *cgroup)
{
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return false;
	char home[PATH_MAX], path[PATH_MAX], entry[PATH_MAX + 32];
	if (cgroup)
		snprintf(home, sizeof home, "%s", cgroup);
	else
		protected_cgroup_of(pid, home, sizeof home);
	snprintf(path, sizeof path, "%s/%d", dir, (int)pid);
	int length =
		snprintf(entry, sizeof entry, "%" PRIu64 " %s\n", protected_start_time(pid), home);
	return length > 0 && length < (int)sizeof entry &&
	       io_replace_file(path, entry, (size_t)length, 0600, 0);
}

void protected_remove(const char *dir, pid_t pid)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%d", dir, (int)pid);
	unlink(path);
}

/* Reads the entry of `pid`: true when there is one and it is this very
 * process (same start time). `home` (optional) gets its cgroup dir. */
static bool entry_matches(const char *dir, pid_t pid, char *home, size_t home_size)
{
	char path[PATH_MAX], text[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/%d", dir, (int)pid);
	/* The shims' guard reads this while a command waits: a FIFO put in
	 * its place by a root command must not make the shim wait too. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return false;
	struct stat st;
	ssize_t n =
		fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, text, sizeof text - 1) : -1;
	close(fd);
	if (n <= 0)
		return false;
	text[n] = '\0';
	char *rest;
	uint64_t start = strtoull(text, &rest, 10);
	if (home) {
		rest += strspn(rest, " ");
		rest[strcspn(rest, "\n")] = '\0';
		snprintf(home, home_size, "%s", rest);
	}
	return start && start == protected_start_time(pid);
}

bool protected_is(const char *dir, pid_t pid)
{
	if (pid <= 0)
		return false;
	if (entry_matches(dir, pid, NULL, 0))
		return true;
	pid_t process = protected_thread_group(pid);
	return process > 0 && process != pid && entry_matches(dir, process, NULL, 0);
}

/* Calls `each` for every entry's pid; stops when it returns true. */
static bool any_entry(const char *dir, bool (*each)(const char *dir, pid_t pid, void *arg),
		      void *arg)
{
	DIR *directory = opendir(dir);
	if (!directory)
		return false;
	bool found = false;
	struct dirent *item;
	while (!found && (item = readdir(directory))) {
		char *end;
		long pid = strtol(item->d_name, &end, 10);
		if (item->d_name[0] != '.' && !*end && pid > 0)
			found = each(dir, (pid_t)pid, arg);
	}
	closedir(directory);
	return found;
}

static bool in_group(const char *dir, pid_t pid, void *arg)
{
	return protected_process_group(pid) == *(pid_t *)arg && entry_matches(dir, pid, NULL, 0);
}

bool protected_in_group(const char *dir, pid_t pgid)
{
	return pgid > 0 && any_entry(dir, in_group, &pgid);
}

static bool prune_one(const char *dir, pid_t pid, void *arg)
{
	if (!entry_matches(dir, pid, NULL, 0))
		protected_remove(dir, pid);
	return false;
}

void protected_prune(const char *dir)
{
	any_entry(dir, prune_one, NULL);
}

struct rescue {
	const char *cgroup_dir;
	int moved;
};

static bool rescue_one(const char *dir, pid_t pid, void *arg)
{
	struct rescue *rescue = arg;
	char home[PATH_MAX], now[PATH_MAX];
	if (!entry_matches(dir, pid, home, sizeof home) || !home[0] ||
	    cgroup_dir_within(home, rescue->cgroup_dir))
		return false;
	protected_cgroup_of(pid, now, sizeof now);
	if (now[0] && cgroup_dir_within(now, rescue->cgroup_dir))
		rescue->moved += cgroup_move(home, pid);
	return false;
}

int protected_rescue(const char *dir, const char *cgroup_dir)
{
	/* From the protected side: each entry's process, wherever it is now.
	 * A command can make cgroups below its own (or another job's) as deep
	 * and as many as it likes, and cgroup.kill reaches them all, while the
	 * protected processes are a few dozen at most: reading where each one
	 * is costs the same whatever the command built, and needs no walk. */
	struct rescue rescue = {cgroup_dir, 0};
	any_entry(dir, rescue_one, &rescue);
	return rescue.moved;
}
