/* ports-scan.c: who holds each listening socket (ports-scan.h).
 *
 * Three walks of /proc: the Docker containers (one pid each, from
 * /proc/PID/cgroup) and their network namespaces, whose listeners the box's
 * sock_diag dump cannot see (read from that pid's /proc/PID/net/tcp{,6});
 * then /proc/PID/fd/N links ("socket:[inode]") until every listener's
 * inode has its process; then each holder's command line, cgroup and
 * parents. Reading another root process's fd links needs CAP_SYS_PTRACE
 * (its capabilities exceed boxd's): boxd keeps it for this
 * (docs/confinement.md). */
#include "ports-scan.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protected.h"
#include "utf8.h"
#include "xalloc.h"

/* /proc/PID/cgroup is a line per hierarchy: a few hundred bytes. */
#define CGROUP_READ_MAX (16 * 1024)
/* A container's /proc/PID/net/tcp lists its connections too. */
#define NET_TCP_READ_MAX (16 * 1024 * 1024)
#define TCP_LISTEN_HEX 0x0A

/* ---- small reads ---- */

/* At most `max` bytes of a file, NUL-terminated (caller frees); NULL when
 * it cannot be opened. */
static char *read_prefix(const char *path, size_t max, size_t *length)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t capacity = max < 4096 ? max : 4096, used = 0;
	char *data = xmalloc(capacity + 1);
	for (;;) {
		if (used == capacity) {
			if (capacity == max)
				break;
			capacity = capacity * 2 < max ? capacity * 2 : max;
			data = xrealloc(data, capacity + 1);
		}
		ssize_t got = read(fd, data + used, capacity - used);
		if (got <= 0)
			break;
		used += (size_t)got;
	}
	close(fd);
	data[used] = '\0';
	if (length)
		*length = used;
	return data;
}

/* The next process of /proc (threads are not listed there), 0 at the end. */
static pid_t next_pid(DIR *proc)
{
	struct dirent *entry;
	while ((entry = readdir(proc))) {
		char *end;
		long pid = strtol(entry->d_name, &end, 10);
		if (*end == '\0' && pid > 0 && pid <= INT32_MAX)
			return (pid_t)pid;
	}
	return 0;
}

static void append(struct ports_scan *scan, size_t *capacity, const struct listen_socket *socket,
		   bool in_box, const char *container)
{
	if (scan->count == *capacity) {
		*capacity = *capacity ? *capacity * 2 : 32;
		scan->found = xrealloc(scan->found, *capacity * sizeof *scan->found);
	}
	struct ports_found *found = &scan->found[scan->count++];
	*found = (struct ports_found){.socket = *socket, .in_box = in_box};
	snprintf(found->container, sizeof found->container, "%s", container ? container : "");
}

/* ---- parsing ---- */

static bool is_hex(const char *text, size_t length)
{
	for (size_t i = 0; i < length; i++)
		if (!((text[i] >= '0' && text[i] <= '9') || (text[i] >= 'a' && text[i] <= 'f') ||
		      (text[i] >= 'A' && text[i] <= 'F')))
			return false;
	return true;
}

/* The kernel prints each 32-bit word of the address as the number it is in
 * memory (%08X of a __be32): parsed back into memory, the bytes are the
 * address's own on the machine that printed them. */
static bool parse_address(const char *hex, int family, void *address)
{
	size_t words = family == AF_INET ? 1 : 4;
	if (strlen(hex) != words * 8 || !is_hex(hex, words * 8))
		return false;
	for (size_t i = 0; i < words; i++) {
		char word[9];
		memcpy(word, hex + i * 8, 8);
		word[8] = '\0';
		uint32_t value = (uint32_t)strtoul(word, NULL, 16);
		memcpy((unsigned char *)address + i * 4, &value, 4);
	}
	return true;
}

bool ports_parse_tcp_line(const char *line, int family, struct listen_socket *socket)
{
	char local[33];
	unsigned port, state;
	unsigned long inode;
	/* sl, local, remote, st, tx:rx queues, timer, retransmits, uid, timeout, inode */
	if (sscanf(line,
		   " %*u: %32[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %*x:%*x %*x:%*x %*x %*u %*d %lu",
		   local, &port, &state, &inode) != 4 ||
	    state != TCP_LISTEN_HEX || port > 65535)
		return false;
	unsigned char address[16];
	if (!parse_address(local, family, address))
		return false;
	*socket = (struct listen_socket){.family = family, .port = port, .inode = inode};
	inet_ntop(family, address, socket->address, sizeof socket->address);
	return true;
}

/* A component of a cgroup path that names a container: systemd's driver
 * ("docker-<id>.scope") or cgroupfs's ("<id>" below "docker"). */
static bool container_component(const char *name, size_t length, bool below_docker,
				char id[PORTS_CONTAINER_ID_LENGTH + 1])
{
	static const char prefix[] = "docker-", suffix[] = ".scope";
	const size_t hex = PORTS_CONTAINER_ID_LENGTH;
	const char *start = NULL;
	if (length == sizeof prefix - 1 + hex + sizeof suffix - 1 &&
	    !memcmp(name, prefix, sizeof prefix - 1) &&
	    !memcmp(name + length - (sizeof suffix - 1), suffix, sizeof suffix - 1))
		start = name + sizeof prefix - 1;
	else if (below_docker && length == hex)
		start = name;
	if (!start || !is_hex(start, hex))
		return false;
	memcpy(id, start, hex);
	id[hex] = '\0';
	return true;
}

bool ports_container_of_cgroup(const char *text, char id[PORTS_CONTAINER_ID_LENGTH + 1])
{
	for (const char *line = text; *line;) {
		size_t line_length = strcspn(line, "\n");
		/* "hierarchy:controllers:/path": the path is after the second ':'. */
		const char *colon = memchr(line, ':', line_length);
		colon = colon ? memchr(colon + 1, ':', line_length - (size_t)(colon + 1 - line))
			      : NULL;
		bool below_docker = false;
		for (const char *part = colon ? colon + 1 : line + line_length;
		     part < line + line_length;) {
			size_t length = strcspn(part, "/\n");
			if (container_component(part, length, below_docker, id))
				return true;
			below_docker = length == 6 && !memcmp(part, "docker", 6);
			part += length + (part[length] == '/');
		}
		line += line_length + (line[line_length] == '\n');
	}
	return false;
}

/* ---- the containers' own network namespaces ---- */

struct container {
	char id[PORTS_CONTAINER_ID_LENGTH + 1];
	pid_t pid;
};

/* One process of each Docker container found in /proc. */
static struct container *find_containers(size_t *count, size_t *processes)
{
	struct container *containers = NULL;
	*count = 0;
	DIR *proc = opendir("/proc");
	for (pid_t pid; proc && (pid = next_pid(proc));) {
		(*processes)++;
		char path[64], id[PORTS_CONTAINER_ID_LENGTH + 1];
		snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
		char *text = read_prefix(path, CGROUP_READ_MAX, NULL);
		bool found = text && ports_container_of_cgroup(text, id);
		free(text);
		size_t i = 0;
		while (found && i < *count && strcmp(containers[i].id, id))
			i++;
		if (!found || i < *count)
			continue;
		containers = xrealloc(containers, (*count + 1) * sizeof *containers);
		containers[*count].pid = pid;
		memcpy(containers[(*count)++].id, id, sizeof id);
	}
	if (proc)
		closedir(proc);
	return containers;
}

static ino_t netns_of(const char *process)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%s/ns/net", process);
	struct stat info;
	return stat(path, &info) == 0 ? info.st_ino : 0;
}

static void read_net_tcp(struct ports_scan *scan, size_t *capacity, const struct container *c,
			 const char *file, int family)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/net/%s", (int)c->pid, file);
	char *text = read_prefix(path, NET_TCP_READ_MAX, NULL);
	for (char *line = text, *end; line && *line; line = end + (*end == '\n')) {
		end = line + strcspn(line, "\n");
		char saved = *end;
		*end = '\0';
		struct listen_socket socket;
		if (ports_parse_tcp_line(line, family, &socket))
			append(scan, capacity, &socket, false, c->id);
		*end = saved;
	}
	free(text);
}

/* Every container's listeners, once per network namespace: none for those
 * on the box's own network (the box's dump has them), one read for those
 * that share one. */
static void add_container_listeners(struct ports_scan *scan, size_t *capacity)
{
	size_t count;
	struct container *containers = find_containers(&count, &scan->processes);
	ino_t box = netns_of("self"), *seen = xcalloc(count + 1, sizeof *seen);
	for (size_t i = 0; i < count; i++) {
		char pid[16];
		snprintf(pid, sizeof pid, "%d", (int)containers[i].pid);
		seen[i] = netns_of(pid);
		bool repeat = seen[i] == 0 || seen[i] == box;
		for (size_t j = 0; !repeat && j < i; j++)
			repeat = seen[j] == seen[i];
		if (repeat)
			continue;
		read_net_tcp(scan, capacity, &containers[i], "tcp", AF_INET);
		read_net_tcp(scan, capacity, &containers[i], "tcp6", AF_INET6);
	}
	free(seen);
	free(containers);
}

/* ---- the holders ---- */

struct wanted {
	unsigned long inode;
	size_t index;
};

static int by_inode(const void *a, const void *b)
{
	const struct wanted *x = a, *y = b;
	return (x->inode > y->inode) - (x->inode < y->inode);
}

/* Gives every listener of `inode` the holder `pid`; how many it gave. */
static size_t claim(struct ports_scan *scan, struct wanted *wanted, size_t count,
		    unsigned long inode, pid_t pid)
{
	struct wanted key = {inode, 0};
	struct wanted *hit = bsearch(&key, wanted, count, sizeof *wanted, by_inode);
	if (!hit)
		return 0;
	while (hit > wanted && hit[-1].inode == inode)
		hit--;
	size_t claimed = 0;
	for (; hit < wanted + count && hit->inode == inode; hit++) {
		struct ports_found *found = &scan->found[hit->index];
		if (found->pid == 0) {
			found->pid = pid;
			claimed++;
		}
	}
	return claimed;
}

/* How many listeners `pid` holds that had no holder yet. */
static size_t claim_fds(struct ports_scan *scan, struct wanted *wanted, size_t count, pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	DIR *fds = opendir(path);
	if (!fds)
		return 0; /* gone, or a kernel thread's */
	size_t claimed = 0;
	struct dirent *entry;
	while ((entry = readdir(fds))) {
		char link[64];
		ssize_t length = readlinkat(dirfd(fds), entry->d_name, link, sizeof link - 1);
		if (length < 10 || memcmp(link, "socket:[", 8))
			continue;
		link[length] = '\0';
		claimed += claim(scan, wanted, count, strtoul(link + 8, NULL, 10), pid);
	}
	closedir(fds);
	return claimed;
}

/* Walks /proc in pid order (a socket shared by a parent and its forks goes
 * to the parent, the lowest pid) and stops once every listener has one. */
static void find_holders(struct ports_scan *scan)
{
	struct wanted *wanted = xcalloc(scan->count + 1, sizeof *wanted);
	size_t count = 0;
	for (size_t i = 0; i < scan->count; i++)
		if (scan->found[i].socket.inode) /* 0: no file, so no holder to find */
			wanted[count++] = (struct wanted){scan->found[i].socket.inode, i};
	qsort(wanted, count, sizeof *wanted, by_inode);
	size_t left = count;
	DIR *proc = opendir("/proc");
	for (pid_t pid; left && proc && (pid = next_pid(proc));)
		left -= claim_fds(scan, wanted, count, pid);
	if (proc)
		closedir(proc);
	free(wanted);
}

/* The command line with its arguments joined by spaces, valid UTF-8, or
 * NULL when it is empty (a kernel thread, a zombie) or gone. */
static char *cmdline_of(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	size_t length = 0;
	char *raw = read_prefix(path, PORTS_CMDLINE_READ_MAX, &length);
	if (!raw)
		return NULL;
	while (length && raw[length - 1] == '\0')
		length--;
	for (size_t i = 0; i < length; i++)
		if (raw[i] == '\0')
			raw[i] = ' ';
	char *command = length ? utf8_sanitize(raw, length, NULL) : NULL;
	free(raw);
	return command;
}

/* The command line, else "[comm]" as ps shows a process without one. */
static char *command_of(pid_t pid)
{
	char *command = cmdline_of(pid);
	if (command)
		return command;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	char *comm = read_prefix(path, 64, NULL);
	if (!comm)
		return NULL;
	comm[strcspn(comm, "\n")] = '\0';
	if (comm[0]) {
		char *sanitized = utf8_sanitize(comm, strlen(comm), NULL);
		command = xasprintf("[%s]", sanitized);
		free(sanitized);
	}
	free(comm);
	return command;
}

static void describe_holder(struct ports_found *found)
{
	found->command = command_of(found->pid);
	char dir[PATH_MAX];
	protected_cgroup_of(found->pid, dir, sizeof dir);
	found->cgroup = dir[0] ? xstrdup(dir) : NULL;
	char path[64], id[PORTS_CONTAINER_ID_LENGTH + 1];
	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)found->pid);
	char *text = read_prefix(path, CGROUP_READ_MAX, NULL);
	if (text && ports_container_of_cgroup(text, id))
		memcpy(found->container, id, sizeof id);
	free(text);
	for (pid_t at = protected_parent(found->pid);
	     at > 0 && found->ancestor_count < PORTS_ANCESTORS_MAX; at = protected_parent(at)) {
		found->ancestors[found->ancestor_count++] = at;
		if (at == 1)
			break;
	}
}

/* A holder of several listeners is read once. */
static void describe_holders(struct ports_scan *scan)
{
	for (size_t i = 0; i < scan->count; i++) {
		struct ports_found *found = &scan->found[i];
		if (found->pid == 0)
			continue;
		size_t same = 0;
		while (same < i && scan->found[same].pid != found->pid)
			same++;
		if (same == i) {
			describe_holder(found);
			continue;
		}
		const struct ports_found *first = &scan->found[same];
		found->command = first->command ? xstrdup(first->command) : NULL;
		found->cgroup = first->cgroup ? xstrdup(first->cgroup) : NULL;
		if (first->container[0])
			memcpy(found->container, first->container, sizeof found->container);
		memcpy(found->ancestors, first->ancestors, sizeof found->ancestors);
		found->ancestor_count = first->ancestor_count;
	}
}

void ports_scan_run(struct ports_scan *scan, struct listen_socket *box, size_t box_count)
{
	*scan = (struct ports_scan){0};
	size_t capacity = 0;
	for (size_t i = 0; i < box_count; i++)
		append(scan, &capacity, &box[i], true, NULL);
	free(box);
	add_container_listeners(scan, &capacity);
	find_holders(scan);
	describe_holders(scan);
}

void ports_scan_free(struct ports_scan *scan)
{
	for (size_t i = 0; i < scan->count; i++) {
		free(scan->found[i].command);
		free(scan->found[i].cgroup);
	}
	free(scan->found);
	*scan = (struct ports_scan){0};
}
