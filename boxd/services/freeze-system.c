/* freeze-system.c: cgroups, caches and memory for a freeze (freeze-system.h). */
#include "freeze-system.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "clock.h"
#include "io.h"
#include "xalloc.h"

/* Free memory zeroed in pieces of this size, kept above a reserve of the
 * larger of these: what the kernel and the frozen box need meanwhile. */
#define ZERO_CHUNK_BYTES (64LL << 20)
#define ZERO_RESERVE_BYTES (256LL << 20)
#define ZERO_RESERVE_SHARE 32 /* 1/32 of the box's memory */
#define ZERO_MAX_CHUNKS 4096  /* 256 GiB */
/* VIRTIO_BALLOON_F_REPORTING, a bit of the device's features string. */
#define BALLOON_F_REPORTING 5

/* ---- which cgroups ---- */

void freeze_cgroups_add(struct freeze_cgroups *list, char *dir, bool container)
{
	list->dirs = xrealloc(list->dirs, (list->count + 1) * sizeof *list->dirs);
	list->container = xrealloc(list->container, (list->count + 1) * sizeof *list->container);
	list->dirs[list->count] = dir;
	list->container[list->count++] = container;
}

/* Each command's cgroup is a child of the commands' one; its own children
 * (what the command made) freeze with it. */
static void add_commands(const char *commands, const char *shims, struct freeze_cgroups *list)
{
	DIR *dir = commands ? opendir(commands) : NULL;
	if (!dir)
		return;
	struct dirent *entry;
	while ((entry = readdir(dir))) {
		if (entry->d_type != DT_DIR || entry->d_name[0] == '.')
			continue;
		char *path = xasprintf("%s/%s", commands, entry->d_name);
		if (shims && strcmp(path, shims) == 0)
			free(path);
		else
			freeze_cgroups_add(list, path, false);
	}
	closedir(dir);
}

static bool is_dir(const char *path)
{
	struct stat info;
	return stat(path, &info) == 0 && S_ISDIR(info.st_mode);
}

/* Containers: where Docker puts them with either cgroup driver. */
static void add_containers(const char *mount, struct freeze_cgroups *list)
{
	const char *patterns[] = {"system.slice/docker-*.scope", "docker/*"};
	for (size_t i = 0; i < 2; i++) {
		char *pattern = xasprintf("%s/%s", mount, patterns[i]);
		glob_t found = {0};
		if (glob(pattern, GLOB_ONLYDIR | GLOB_NOSORT, NULL, &found) == 0)
			for (size_t j = 0; j < found.gl_pathc; j++)
				if (is_dir(found.gl_pathv[j])) /* GLOB_ONLYDIR is a hint */
					freeze_cgroups_add(list, xstrdup(found.gl_pathv[j]), true);
		globfree(&found);
		free(pattern);
	}
}

void freeze_cgroups_list(const char *commands, const char *shims, struct freeze_cgroups *list)
{
	*list = (struct freeze_cgroups){0};
	add_commands(commands, shims, list);
	struct cgroup_host host;
	if (cgroup_discover(&host) && host.v2_mount)
		add_containers(host.v2_mount, list);
	cgroup_host_free(&host);
}

void freeze_cgroups_free(struct freeze_cgroups *list)
{
	for (size_t i = 0; i < list->count; i++)
		free(list->dirs[i]);
	free(list->dirs);
	free(list->container);
	*list = (struct freeze_cgroups){0};
}

/* ---- memory ---- */

bool freeze_memory_read(struct freeze_memory *memory)
{
	FILE *file = fopen("/proc/meminfo", "re");
	if (!file)
		return false;
	long long total = -1, free_kb = 0, buffers = 0, cached = 0, reclaimable = 0, value;
	char key[64];
	while (fscanf(file, "%63s %lld kB ", key, &value) == 2) {
		if (strcmp(key, "MemTotal:") == 0)
			total = value;
		else if (strcmp(key, "MemFree:") == 0)
			free_kb = value;
		else if (strcmp(key, "Buffers:") == 0)
			buffers = value;
		else if (strcmp(key, "Cached:") == 0)
			cached = value;
		else if (strcmp(key, "SReclaimable:") == 0)
			reclaimable = value;
	}
	fclose(file);
	long long cache = buffers + cached + reclaimable;
	memory->total = total * 1024;
	memory->free = free_kb * 1024;
	memory->cache = cache * 1024;
	memory->used = (total - free_kb - cache) * 1024;
	return total > 0;
}

cJSON *freeze_memory_json(const struct freeze_memory *memory)
{
	cJSON *object = cJSON_CreateObject();
	cJSON_AddNumberToObject(object, "usedBytes", (double)memory->used);
	cJSON_AddNumberToObject(object, "cacheBytes", (double)memory->cache);
	return object;
}

/* ---- caches ---- */

bool freeze_balloon_reports(void)
{
	glob_t found;
	bool reports = false;
	if (glob("/sys/bus/virtio/drivers/virtio_balloon/virtio*/features", GLOB_NOSORT, NULL,
		 &found) != 0)
		return false;
	for (size_t i = 0; i < found.gl_pathc && !reports; i++) {
		char bits[128] = "";
		FILE *file = fopen(found.gl_pathv[i], "re");
		if (!file)
			continue;
		if (fgets(bits, sizeof bits, file) && strlen(bits) > BALLOON_F_REPORTING)
			reports = bits[BALLOON_F_REPORTING] == '1';
		fclose(file);
	}
	globfree(&found);
	return reports;
}

/* Writes `value` to a /proc/sys file; false with errno. */
static bool write_sysctl(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = io_write_all(fd, value, strlen(value));
	int saved = errno;
	close(fd);
	errno = saved;
	return ok;
}

/* How much more boxd's own cgroup lets it hold (memory.max less
 * memory.current), or INT64_MAX without a limit. */
static int64_t cgroup_headroom(void)
{
	struct cgroup_host host;
	int64_t room = INT64_MAX;
	if (cgroup_discover(&host) && host.v2_mount && host.v2_self) {
		char *max_path = xasprintf("%s%s/memory.max", host.v2_mount, host.v2_self);
		char *now_path = xasprintf("%s%s/memory.current", host.v2_mount, host.v2_self);
		FILE *max_file = fopen(max_path, "re"), *now_file = fopen(now_path, "re");
		long long max, now;
		if (max_file && now_file && fscanf(max_file, "%lld", &max) == 1 &&
		    fscanf(now_file, "%lld", &now) == 1)
			room = max - now;
		if (max_file)
			fclose(max_file);
		if (now_file)
			fclose(now_file);
		free(max_path);
		free(now_path);
	}
	cgroup_host_free(&host);
	return room;
}

/* Fills what the drop freed with zeros: the dropped caches' pages still
 * hold their old contents, which a snapshot saves in full; pages the kernel
 * hands out are zeroed first, so taking `limit` bytes (MAP_POPULATE) and
 * giving them back leaves zeros, which a snapshot (QEMU's savevm, any format
 * that skips zero pages) stores in a few bytes each. The kernel hands out
 * the pages freed last first, and keeps pages already reported to the host
 * at the tail of its free lists, so this takes the dropped caches' pages
 * and not the ones the host has taken back (touching those would make the
 * host back them again). The balloon's free page reporting alone zeroes
 * them too, but reports 1/16 of the free memory per pass, a pass every
 * 2 s: half a minute for a few GiB. Keeps a reserve free, re-read at every
 * piece, and stays within boxd's own cgroup limit. Returns the bytes
 * zeroed. */
static int64_t zero_free_memory(int64_t limit)
{
	struct freeze_memory memory = {0};
	freeze_memory_read(&memory);
	int64_t reserve = memory.total / ZERO_RESERVE_SHARE;
	if (reserve < ZERO_RESERVE_BYTES)
		reserve = ZERO_RESERVE_BYTES;
	int64_t room = cgroup_headroom() - ZERO_RESERVE_BYTES;
	void *chunks[ZERO_MAX_CHUNKS];
	size_t held = 0;
	if (room > limit)
		room = limit;
	while (held < ZERO_MAX_CHUNKS && (int64_t)(held + 1) * ZERO_CHUNK_BYTES <= room &&
	       freeze_memory_read(&memory) && memory.free - ZERO_CHUNK_BYTES >= reserve) {
		void *chunk =
			mmap(NULL, ZERO_CHUNK_BYTES, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE | MAP_NORESERVE, -1, 0);
		if (chunk == MAP_FAILED)
			break;
		chunks[held++] = chunk;
	}
	for (size_t i = 0; i < held; i++)
		munmap(chunks[i], ZERO_CHUNK_BYTES);
	return (int64_t)held * ZERO_CHUNK_BYTES;
}

/* Adds "<name>Ms": the time since *mark, which moves on to now. */
static void add_step_ms(cJSON *outcome, const char *name, int64_t *mark)
{
	int64_t now = clock_monotonic_ms();
	char key[32];
	snprintf(key, sizeof key, "%sMs", name);
	cJSON_AddNumberToObject(outcome, key, (double)(now - *mark));
	*mark = now;
}

void freeze_flush_and_reclaim(bool reclaim, cJSON *outcome)
{
	int64_t mark = clock_monotonic_ms();
	sync();
	cJSON_AddBoolToObject(outcome, "synced", true);
	add_step_ms(outcome, "sync", &mark);
	if (!reclaim)
		return;
	/* 3: the page cache and the reclaimable slab (dentries, inodes), clean
	 * after the sync; what commands need again is read back from disk. */
	struct freeze_memory before = {0}, after = {0};
	freeze_memory_read(&before);
	bool dropped = write_sysctl("/proc/sys/vm/drop_caches", "3");
	freeze_memory_read(&after);
	if (!dropped) {
		char error[160];
		snprintf(error, sizeof error, "cannot drop the caches: %s", strerror(errno));
		cJSON_AddStringToObject(outcome, "error", error);
	}
	cJSON_AddBoolToObject(outcome, "dropped", dropped);
	add_step_ms(outcome, "drop", &mark);
	/* Whole free blocks are what the balloon reports (2 MiB, the
	 * kernel's page_reporting_order): compaction makes more of them. */
	bool compacted = dropped && write_sysctl("/proc/sys/vm/compact_memory", "1");
	cJSON_AddBoolToObject(outcome, "compacted", compacted);
	add_step_ms(outcome, "compact", &mark);
	/* What the drop freed, and an eighth more (pieces round down). */
	int64_t freed = before.cache - after.cache;
	int64_t zeroed = dropped && freed > 0 ? zero_free_memory(freed + freed / 8) : 0;
	cJSON_AddNumberToObject(outcome, "zeroedBytes", (double)zeroed);
	add_step_ms(outcome, "zero", &mark);
	/* Reported or not, the snapshot is small; reporting gives the memory
	 * back to the host while the box runs on or stands paused. */
	cJSON_AddBoolToObject(outcome, "reported", freeze_balloon_reports());
}
