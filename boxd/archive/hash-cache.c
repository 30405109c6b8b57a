#include "hash-cache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "xalloc.h"

#define CACHE_MAGIC 0x3143484458424fULL /* "OBXDHC1" */
#define CACHE_MIN_SLOTS 4096u
/* Past this many records the table starts afresh rather than grow without
 * bound on a tree whose inodes keep changing (about 80 MB of file). */
#define CACHE_MAX_RECORDS (1u << 20)

struct cache_header {
	uint64_t magic;
	uint64_t slot_count; /* a power of two */
	uint64_t record_count;
	uint64_t reserved;
};

struct cache_slot {
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns, hashed_at_ns;
	uint32_t mode;
	unsigned char hash[ENTRY_HASH_SIZE];
	uint64_t check; /* FNV-1a of the fields above; 0 means empty */
};

struct hash_cache {
	char *path;
	int fd;
	struct cache_header *header;
	size_t map_size;
	int users;
};

/* Opening and closing share one mutex; the table itself a read-write lock,
 * so the threads of a warm diff (lookups only) never wait on each other. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct hash_cache *shared_cache;

int64_t hash_cache_now_ns(void)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static uint64_t slot_checksum(const struct cache_slot *slot)
{
	const unsigned char *bytes = (const unsigned char *)slot;
	uint64_t sum = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < offsetof(struct cache_slot, check); i++)
		sum = (sum ^ bytes[i]) * 0x100000001b3ULL;
	return sum ? sum : 1;
}

static struct cache_slot *slots(struct hash_cache *cache)
{
	return (struct cache_slot *)(cache->header + 1);
}

static size_t map_size_for(uint64_t slot_count)
{
	return sizeof(struct cache_header) + slot_count * sizeof(struct cache_slot);
}

static uint64_t slot_index(uint64_t dev, uint64_t ino, uint64_t slot_count)
{
	uint64_t mix = (ino ^ (dev * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
	return (mix ^ (mix >> 29)) & (slot_count - 1);
}

static void cache_unmap(struct hash_cache *cache)
{
	if (cache->header)
		munmap(cache->header, cache->map_size);
	cache->header = NULL;
	if (cache->fd >= 0)
		close(cache->fd);
	cache->fd = -1;
}

/* Maps the file at cache->path, replacing it with an empty table of
 * `slot_count` slots when `fresh` or when what is there is not a table. */
static bool cache_map(struct hash_cache *cache, uint64_t slot_count, bool fresh)
{
	int fd = open(cache->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		log_msg(LOG_LEVEL_WARNING,
			"hash cache %s cannot be opened (%s); diffs hash every file", cache->path,
			strerror(errno));
		return false;
	}
	struct stat st;
	struct cache_header header = {0};
	bool valid = !fresh && fstat(fd, &st) == 0 &&
		     pread(fd, &header, sizeof header, 0) == sizeof header &&
		     header.magic == CACHE_MAGIC && header.slot_count >= CACHE_MIN_SLOTS &&
		     (header.slot_count & (header.slot_count - 1)) == 0 &&
		     header.slot_count <= 4 * CACHE_MAX_RECORDS &&
		     (uint64_t)st.st_size == map_size_for(header.slot_count);
	if (valid)
		slot_count = header.slot_count;
	size_t size = map_size_for(slot_count);
	if (!valid && (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)size) < 0)) {
		log_msg(LOG_LEVEL_WARNING, "hash cache %s cannot be sized (%s)", cache->path,
			strerror(errno));
		close(fd);
		return false;
	}
	/* Populated at once: a diff touches pages all over the table. */
	void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (map == MAP_FAILED) {
		close(fd);
		return false;
	}
	cache->fd = fd;
	cache->header = map;
	cache->map_size = size;
	if (!valid) {
		cache->header->slot_count = slot_count;
		cache->header->record_count = 0;
		cache->header->magic = CACHE_MAGIC;
	}
	return true;
}

struct hash_cache *hash_cache_open(const char *path)
{
	pthread_mutex_lock(&cache_lock);
	struct hash_cache *cache = shared_cache;
	if (cache && strcmp(cache->path, path) != 0)
		cache = NULL; /* another path (tests): a private handle */
	if (!cache) {
		cache = xcalloc(1, sizeof *cache);
		cache->path = xstrdup(path);
		cache->fd = -1;
		if (!cache_map(cache, CACHE_MIN_SLOTS, false)) {
			free(cache->path);
			free(cache);
			pthread_mutex_unlock(&cache_lock);
			return NULL;
		}
		if (!shared_cache)
			shared_cache = cache;
	}
	cache->users++;
	pthread_mutex_unlock(&cache_lock);
	return cache;
}

void hash_cache_close(struct hash_cache *cache)
{
	if (!cache)
		return;
	pthread_mutex_lock(&cache_lock);
	if (--cache->users == 0) {
		cache_unmap(cache);
		if (shared_cache == cache)
			shared_cache = NULL;
		free(cache->path);
		free(cache);
	}
	pthread_mutex_unlock(&cache_lock);
}

static struct cache_slot *find_slot(struct hash_cache *cache, uint64_t dev, uint64_t ino)
{
	uint64_t count = cache->header->slot_count;
	uint64_t index = slot_index(dev, ino, count);
	for (uint64_t probe = 0; probe < count; probe++) {
		struct cache_slot *slot = &slots(cache)[(index + probe) & (count - 1)];
		if (slot->check == 0 || (slot->dev == dev && slot->ino == ino))
			return slot;
	}
	return NULL;
}

static int64_t ns_of(struct timespec time)
{
	return (int64_t)time.tv_sec * 1000000000 + time.tv_nsec;
}

bool hash_cache_lookup(struct hash_cache *cache, const struct stat *st,
		       unsigned char out[ENTRY_HASH_SIZE])
{
	if (!cache)
		return false;
	bool hit = false;
	pthread_rwlock_rdlock(&table_lock);
	struct cache_slot *slot = find_slot(cache, st->st_dev, st->st_ino);
	if (slot && slot->check != 0 && slot->check == slot_checksum(slot) &&
	    slot->size == (uint64_t)st->st_size && slot->mode == st->st_mode &&
	    slot->mtime_ns == ns_of(st->st_mtim) && slot->ctime_ns == ns_of(st->st_ctim) &&
	    slot->mtime_ns < slot->hashed_at_ns && slot->ctime_ns < slot->hashed_at_ns) {
		memcpy(out, slot->hash, ENTRY_HASH_SIZE);
		hit = true;
	}
	pthread_rwlock_unlock(&table_lock);
	return hit;
}

/* Rebuilds the table with `slots` slots in a new file renamed over the old
 * one; starts afresh when it holds too many records to keep. */
static bool cache_grow(struct hash_cache *cache, uint64_t new_slot_count)
{
	struct hash_cache bigger = {.path = xasprintf("%s.new", cache->path), .fd = -1};
	uint64_t count = cache->header->slot_count;
	bool fresh = cache->header->record_count >= CACHE_MAX_RECORDS;
	if (!cache_map(&bigger, fresh ? CACHE_MIN_SLOTS : new_slot_count, true)) {
		free(bigger.path);
		return false;
	}
	for (uint64_t i = 0; i < count && !fresh; i++) {
		struct cache_slot *slot = &slots(cache)[i];
		if (slot->check == 0 || slot->check != slot_checksum(slot))
			continue;
		*find_slot(&bigger, slot->dev, slot->ino) = *slot;
		bigger.header->record_count++;
	}
	bool renamed = rename(bigger.path, cache->path) == 0;
	free(bigger.path);
	if (!renamed) {
		cache_unmap(&bigger);
		return false;
	}
	cache_unmap(cache);
	cache->fd = bigger.fd;
	cache->header = bigger.header;
	cache->map_size = bigger.map_size;
	return true;
}

void hash_cache_reserve(struct hash_cache *cache, unsigned long records)
{
	if (!cache)
		return;
	pthread_rwlock_wrlock(&table_lock);
	uint64_t wanted = (cache->header->record_count + records) * 2;
	uint64_t count = cache->header->slot_count;
	while (count < wanted && count < 4 * (uint64_t)CACHE_MAX_RECORDS)
		count *= 2;
	if (count > cache->header->slot_count)
		cache_grow(cache, count);
	pthread_rwlock_unlock(&table_lock);
}

void hash_cache_store(struct hash_cache *cache, const struct stat *st, int64_t hashed_at_ns,
		      const unsigned char hash[ENTRY_HASH_SIZE])
{
	if (!cache)
		return;
	pthread_rwlock_wrlock(&table_lock);
	if ((cache->header->record_count + 1) * 2 > cache->header->slot_count)
		cache_grow(cache, cache->header->slot_count * 2);
	struct cache_slot *slot = find_slot(cache, st->st_dev, st->st_ino);
	if (slot && (cache->header->record_count + 1) * 2 <= cache->header->slot_count) {
		if (slot->check == 0)
			cache->header->record_count++;
		/* Zeroed whole first: the checksum reads every byte before
		 * `check`, padding included where an ABI has some. */
		struct cache_slot fresh;
		memset(&fresh, 0, sizeof fresh);
		fresh.dev = st->st_dev;
		fresh.ino = st->st_ino;
		fresh.size = (uint64_t)st->st_size;
		fresh.mtime_ns = ns_of(st->st_mtim);
		fresh.ctime_ns = ns_of(st->st_ctim);
		fresh.hashed_at_ns = hashed_at_ns;
		fresh.mode = st->st_mode;
		memcpy(fresh.hash, hash, ENTRY_HASH_SIZE);
		fresh.check = slot_checksum(&fresh);
		*slot = fresh;
	}
	pthread_rwlock_unlock(&table_lock);
}
