#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "xalloc.h"

/* mountinfo fields: id parent major:minor root mountpoint options - fstype source super */
static void read_mounts(struct cgroup_host *host)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	char line[4096];
	while (fgets(line, sizeof line, f)) {
		char root[1024], point[1024], type[64], super[1024];
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", root, point) != 2 ||
		    sscanf(dash + 3, "%63s %*s %1023s", type, super) != 2)
			continue;
		if (!strcmp(type, "cgroup2") && !host->v2_mount)
			host->v2_mount = xstrdup(point);
		else if (!strcmp(type, "cgroup") && !host->pids_mount) {
			/* super options like "rw,pids": the controller is one option */
			for (char *opt = strtok(super, ","); opt; opt = strtok(NULL, ","))
				if (!strcmp(opt, "pids"))
					host->pids_mount = xstrdup(point);
		}
	}
	fclose(f);
}

/* /proc/self/cgroup: "0::/path" for v2, "N:pids:/path" for the v1 pids one. */
static void read_self(struct cgroup_host *host)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return;
	char line[4096];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		char *first = strchr(line, ':');
		char *second = first ? strchr(first + 1, ':') : NULL;
		if (!second)
			continue;
		*second = '\0';
		const char *controllers = first + 1, *path = second + 1;
		if (!*controllers && !host->v2_self)
			host->v2_self = xstrdup(path);
		else if (!strcmp(controllers, "pids") && !host->pids_self)
			host->pids_self = xstrdup(path);
	}
	fclose(f);
}

bool cgroup_discover(struct cgroup_host *host)
{
	*host = (struct cgroup_host){0};
	read_mounts(host);
	read_self(host);
	if (host->v2_mount && !host->v2_self) {
		free(host->v2_mount);
		host->v2_mount = NULL;
	}
	if (host->pids_mount && !host->pids_self) {
		free(host->pids_mount);
		host->pids_mount = NULL;
	}
	return host->v2_mount || host->pids_mount;
}

void cgroup_host_free(struct cgroup_host *host)
{
	free(host->v2_mount);
	free(host->v2_self);
	free(host->pids_mount);
	free(host->pids_self);
	*host = (struct cgroup_host){0};
}

/* Async-signal-safe small write. */
static bool write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	size_t a = strlen(dir), b = strlen(name);
	if (a + b + 2 > sizeof path)
		return false;
	memcpy(path, dir, a);
	path[a] = '/';
	memcpy(path + a + 1, name, b + 1);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text);
}

static char *read_file(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "re");
	free(path);
	if (!f)
		return NULL;
	size_t capacity = 4096, used = 0;
	char *text = xmalloc(capacity);
	size_t n;
	while ((n = fread(text + used, 1, capacity - used - 1, f)) > 0) {
		used += n;
		if (used + 1 == capacity)
			text = xrealloc(text, capacity *= 2);
	}
	fclose(f);
	text[used] = '\0';
	return text;
}

static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
			return true;
	return false;
}

static char *make_dir(char *path)
{
	if (mkdir(path, 0755) == 0 || errno == EEXIST)
		return path;
	free(path);
	return NULL;
}

static char *join_path(const char *mount, const char *self)
{
	return xasprintf("%s%s", mount, strcmp(self, "/") ? self : "");
}

/* Finds or makes the v2 dir that holds the commands' cgroups (see cgroup.h).
 * Sets *controllers when boxd may enable controllers for the commands there. */
static char *prepare_v2(const struct cgroup_host *host, const char *tag, const char *commands,
			bool *controllers, char **problem)
{
	*controllers = false;
	if (commands && *commands) {
		char *base = join_path(host->v2_mount, commands);
		struct stat info;
		if (stat(base, &info) == 0 && S_ISDIR(info.st_mode)) {
			/* Its unit's keeper sits in a leaf (boxd-shim
			 * --keep-cgroup): with nothing in the root, controllers
			 * may be enabled for children. */
			char *procs = read_file(base, "cgroup.procs");
			*controllers = procs && !procs[0];
			if (procs && procs[0])
				*problem = xasprintf("the commands' cgroup %s holds processes of "
						     "its own: no controllers for commands",
						     base);
			free(procs);
			return base;
		}
		*problem = xasprintf("the commands' cgroup %s is missing (is boxd-commands.service "
				     "active?): commands share boxd's unit, without per-command "
				     "memory figures or caps",
				     base);
		free(base);
	}
	char *self = join_path(host->v2_mount, host->v2_self);
	if (!strcmp(host->v2_self, "/")) {
		/* The root cgroup is exempt from the no-internal-processes rule. */
		*controllers = true;
		char *base = make_dir(xasprintf("%s/boxd-%s", self, tag));
		free(self);
		return base;
	}
	/* Inside a unit of its own (systemd) without a commands' cgroup: a
	 * `commands` child, and no controller enabled in the unit's cgroup ever,
	 * because systemd 252 starts the next boxd in that cgroup, which the
	 * kernel refuses (EBUSY) while it has controllers enabled for children. */
	char *base = make_dir(xasprintf("%s/commands", self));
	free(self);
	if (base && !*problem)
		*problem = xstrdup("no commands' cgroup configured (commands-cgroup): commands "
				   "share boxd's unit, without per-command memory figures or caps");
	return base;
}

char *cgroup_prepare(const struct cgroup_host *host, const char *tag, const char *commands,
		     char **v2_base, char **shim_dir, char **pids_base)
{
	*v2_base = *shim_dir = *pids_base = NULL;
	bool v2_pids = false, controllers = false;
	char *problem = NULL;
	if (host->v2_mount)
		*v2_base = prepare_v2(host, tag, commands, &controllers, &problem);
	if (*v2_base && controllers) {
		char *available = read_file(*v2_base, "cgroup.controllers");
		const char *wanted[] = {"pids", "memory", "cpu"};
		for (size_t i = 0; available && i < 3; i++) {
			char change[16];
			snprintf(change, sizeof change, "+%s", wanted[i]);
			if (has_word(available, wanted[i]) &&
			    write_file(*v2_base, "cgroup.subtree_control", change) &&
			    !strcmp(wanted[i], "pids"))
				v2_pids = true;
		}
		free(available);
	}
	if (*v2_base)
		*shim_dir = make_dir(xasprintf("%s/shims", *v2_base));
	if (!v2_pids && host->pids_mount) {
		char *self = join_path(host->pids_mount, host->pids_self);
		*pids_base = make_dir(xasprintf("%s/boxd-%s", self, tag));
		free(self);
	}
	if (problem)
		return problem;
	if (!*v2_base)
		return xstrdup("no writable cgroup v2: commands get their own process group, "
			       "and a daemon that leaves it escapes timeouts");
	if (!v2_pids && !*pids_base)
		return xstrdup("no pids controller: a fork bomb is limited only by rlimits");
	return NULL;
}

bool cgroup_has_memory(const char *v2_base)
{
	char *enabled = v2_base ? read_file(v2_base, "cgroup.subtree_control") : NULL;
	bool yes = enabled && has_word(enabled, "memory");
	free(enabled);
	return yes;
}

/* The command's own cgroup v2 dir below `base`, with its pids limit and
 * memory.oom.group set; NULL when it cannot be made. */
static char *make_v2_job(const char *base, const char *id, uint64_t pids_max)
{
	char *dir = make_dir(xasprintf("%s/%s", base, id));
	if (dir && pids_max) {
		char limit[32];
		snprintf(limit, sizeof limit, "%" PRIu64, pids_max);
		write_file(dir, "pids.max", limit);
	}
	/* An OOM kill takes the whole command, not a random part of it
	 * (processes with oom_score_adj -1000, the shim's, are spared). */
	if (dir)
		write_file(dir, "memory.oom.group", "1");
	return dir;
}

bool cgroup_job_create(struct cgroup_job *job, const char *v2_base, const char *pids_base,
		       const char *id, uint64_t pids_max, uint64_t memory_max)
{
	*job = (struct cgroup_job){0};
	char limit[32];
	snprintf(limit, sizeof limit, "%" PRIu64, pids_max);
	if (v2_base) {
		job->v2_dir = make_v2_job(v2_base, id, pids_max);
		if (memory_max && !cgroup_job_set_memory_max(job, memory_max)) {
			if (job->v2_dir)
				rmdir(job->v2_dir);
			free(job->v2_dir);
			job->v2_dir = NULL;
			return false;
		}
	} else if (memory_max)
		return false;
	if (pids_base) {
		job->pids_dir = make_dir(xasprintf("%s/%s", pids_base, id));
		if (job->pids_dir && pids_max && !write_file(job->pids_dir, "pids.max", limit)) {
			rmdir(job->pids_dir);
			free(job->pids_dir);
			job->pids_dir = NULL;
		}
	}
	return true;
}

bool cgroup_job_set_memory_max(const struct cgroup_job *job, uint64_t memory_max)
{
	char cap[32];
	snprintf(cap, sizeof cap, "%" PRIu64, memory_max);
	return job->v2_dir && write_file(job->v2_dir, "memory.max", cap);
}

bool cgroup_job_rename(struct cgroup_job *job, const char *v2_base, const char *id,
		       uint64_t pids_max)
{
	if (job->v2_dir) {
		char *dir = make_v2_job(v2_base, id, pids_max);
		if (!dir)
			return false;
		rmdir(job->v2_dir);
		free(job->v2_dir);
		job->v2_dir = dir;
	}
	if (job->pids_dir) {
		/* cgroup v1 dirs may be renamed (v2 ones may not: above). */
		const char *slash = strrchr(job->pids_dir, '/');
		char *dir = xasprintf("%.*s/%s", (int)(slash - job->pids_dir), job->pids_dir, id);
		if (rename(job->pids_dir, dir) != 0) {
			free(dir);
			return false;
		}
		free(job->pids_dir);
		job->pids_dir = dir;
	}
	return true;
}

bool cgroup_dir_within(const char *inner, const char *outer)
{
	size_t length = strlen(outer);
	return strncmp(inner, outer, length) == 0 &&
	       (inner[length] == '\0' || inner[length] == '/');
}

bool cgroup_move(const char *dir, pid_t pid)
{
	char text[24];
	/* Hand-rolled itoa: this runs between fork and exec. */
	char digits[24];
	int n = 0;
	unsigned long value = (unsigned long)pid;
	do
		digits[n++] = (char)('0' + value % 10);
	while ((value /= 10));
	for (int i = 0; i < n; i++)
		text[i] = digits[n - 1 - i];
	text[n] = '\0';
	return write_file(dir, "cgroup.procs", text);
}

bool cgroup_job_join(const struct cgroup_job *job)
{
	bool ok = true;
	if (job->v2_dir)
		ok = write_file(job->v2_dir, "cgroup.procs", "0") && ok;
	if (job->pids_dir)
		ok = write_file(job->pids_dir, "cgroup.procs", "0") && ok;
	return ok;
}

static int signal_listed(const char *dir, int signal)
{
	char *procs = read_file(dir, "cgroup.procs");
	if (!procs)
		return -1;
	int count = 0;
	for (char *p = procs; *p;) {
		char *end;
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		if (pid > 0 && kill((pid_t)pid, signal) == 0)
			count++;
		p = end;
		while (*p == '\n')
			p++;
	}
	free(procs);
	return count;
}

int cgroup_job_signal(const struct cgroup_job *job, int signal)
{
	const char *dir = job->v2_dir ? job->v2_dir : job->pids_dir;
	if (!dir)
		return -1;
	int count = signal_listed(dir, signal);
	/* cgroup.kill also catches processes forked while we walked the list. */
	if (signal == SIGKILL && job->v2_dir)
		write_file(job->v2_dir, "cgroup.kill", "1");
	return count;
}

bool cgroup_job_thaw(const struct cgroup_job *job)
{
	return job->v2_dir && cgroup_set_freeze(job->v2_dir, false);
}

int cgroup_keyed_value(const char *dir, const char *file, const char *key)
{
	char path[PATH_MAX + 32], text[256];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, text, sizeof text - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	size_t length = strlen(key);
	for (char *line = text; line;) {
		if (!strncmp(line, key, length) && line[length] == ' ')
			return atoi(line + length + 1);
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return -1;
}

int cgroup_freeze_setting(const char *dir)
{
	char path[PATH_MAX + 32], text[8] = "";
	snprintf(path, sizeof path, "%s/cgroup.freeze", dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, text, sizeof text - 1);
	close(fd);
	return n > 0 ? text[0] == '1' : -1;
}

bool cgroup_set_freeze(const char *dir, bool frozen)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/cgroup.freeze", dir);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = io_write_all(fd, frozen ? "1" : "0", 1);
	int error = errno;
	close(fd);
	errno = error;
	return ok;
}

int cgroup_job_populated(const struct cgroup_job *job)
{
	/* v2 says it of the whole subtree, cgroups a command made below its
	 * own included; v1's cgroup.procs only of the dir itself. */
	if (job->v2_dir) {
		char *events = read_file(job->v2_dir, "cgroup.events");
		char *at = events ? strstr(events, "populated ") : NULL;
		int populated = at ? at[10] == '1' : -1;
		free(events);
		if (populated >= 0)
			return populated;
	}
	if (!job->pids_dir)
		return -1;
	char *procs = read_file(job->pids_dir, "cgroup.procs");
	if (!procs)
		return -1;
	int populated = procs[0] != '\0';
	free(procs);
	return populated;
}

int64_t cgroup_job_cpu_ms(const struct cgroup_job *job)
{
	if (!job->v2_dir)
		return -1;
	char *stat = read_file(job->v2_dir, "cpu.stat");
	char *at = stat ? strstr(stat, "usage_usec ") : NULL;
	int64_t ms = at ? strtoll(at + 11, NULL, 10) / 1000 : -1;
	free(stat);
	return ms;
}

int64_t cgroup_job_peak_memory(const struct cgroup_job *job)
{
	if (!job->v2_dir)
		return -1;
	char *peak = read_file(job->v2_dir, "memory.peak");
	int64_t bytes = peak && *peak ? strtoll(peak, NULL, 10) : -1;
	free(peak);
	return bytes;
}

int64_t cgroup_job_oom_kills(const struct cgroup_job *job)
{
	if (!job->v2_dir)
		return -1;
	/* Hierarchical: a kill of any process of the tree counts, whichever
	 * cgroup's limit (the command's own or the commands' parent) was hit. */
	char *events = read_file(job->v2_dir, "memory.events");
	int64_t kills = -1;
	for (char *line = events; line && *line;) {
		if (!strncmp(line, "oom_kill ", 9)) {
			kills = strtoll(line + 9, NULL, 10);
			break;
		}
		char *next = strchr(line, '\n');
		line = next ? next + 1 : NULL;
	}
	free(events);
	return kills;
}

void cgroup_job_remove(const struct cgroup_job *job)
{
	if (job->v2_dir)
		rmdir(job->v2_dir);
	if (job->pids_dir)
		rmdir(job->pids_dir);
}

/* Below this many levels (or past this many cgroups) a command's own
 * cgroups are left: the walk holds one open dir per level. */
#define REMOVE_DEPTH 16
#define REMOVE_COUNT 4096

/* Removes the empty cgroups below `parent` (an open dir), children first;
 * `budget` counts down the cgroups looked at. */
static void remove_children(int parent, int depth, int *budget)
{
	DIR *dir = fdopendir(parent);
	if (!dir) {
		close(parent);
		return;
	}
	struct dirent *item;
	while (*budget > 0 && (item = readdir(dir))) {
		if (item->d_type != DT_DIR || item->d_name[0] == '.')
			continue;
		(*budget)--;
		int child = openat(dirfd(dir), item->d_name,
				   O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (child >= 0 && depth + 1 < REMOVE_DEPTH)
			remove_children(child, depth + 1, budget);
		else if (child >= 0)
			close(child);
		unlinkat(dirfd(dir), item->d_name, AT_REMOVEDIR); /* fails while busy */
	}
	closedir(dir);
}

void cgroup_remove_below(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int budget = REMOVE_COUNT;
	if (fd >= 0)
		remove_children(fd, 0, &budget);
}

void cgroup_job_free(struct cgroup_job *job)
{
	free(job->v2_dir);
	free(job->pids_dir);
	*job = (struct cgroup_job){0};
}
