/* freeze-system.h: what a freeze does to the system (freeze.h says when):
 * which cgroups the freezer stops (lib/cgroup.h freezes them), the kernel's caches,
 * the memory figures. Each function fails soft and says why. */
#ifndef BOXD_FREEZE_SYSTEM_H
#define BOXD_FREEZE_SYSTEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* The cgroups a freeze stops: every command's (the children of the
 * commands' cgroup but the shims' leaf, which must keep answering boxd) and
 * every Docker container's (system.slice/docker-ID.scope with the systemd
 * driver, docker/ID with cgroupfs), as full paths. */
struct freeze_cgroups {
	char **dirs;
	bool *container; /* per dir: a container's, not a command's */
	size_t count;
};
void freeze_cgroups_list(const char *commands, const char *shims, struct freeze_cgroups *list);
/* Appends `dir` (taken over) to the list. */
void freeze_cgroups_add(struct freeze_cgroups *list, char *dir, bool container);
void freeze_cgroups_free(struct freeze_cgroups *list);

/* Memory as free(1) counts it, from /proc/meminfo: used (MemTotal less free,
 * buffers, page cache and reclaimable slab) and that cache; and the total and
 * free memory themselves. */
struct freeze_memory {
	int64_t used, cache, total, free;
};
bool freeze_memory_read(struct freeze_memory *memory);
cJSON *freeze_memory_json(const struct freeze_memory *memory);

/* True when a virtio balloon that reports free pages to the host
 * (VIRTIO_BALLOON_F_REPORTING) is bound: what the guest frees then leaves
 * the snapshot. */
bool freeze_balloon_reports(void);

/* Writes the file systems' dirty data (sync), then with `reclaim` drops the
 * clean caches, compacts memory and fills what the drop freed with zeros
 * (docs/freeze.md says why). Blocks: for a thread. Fills `outcome` with what
 * happened and how long each step took ({"synced","syncMs","dropped",
 * "dropMs","compacted","compactMs","zeroedBytes","zeroMs","reported",
 * "error"}). */
void freeze_flush_and_reclaim(bool reclaim, cJSON *outcome);

#endif
