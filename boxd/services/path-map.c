/* path-map.c: open addressing with linear probing and backward-shift
 * deletion (no tombstones, so a map that sees endless adds and removes, as
 * the watcher's does, never slows down). */
#include "path-map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

struct slot {
	uint64_t hash; /* 0: empty */
	char *key;
	size_t length;
	void *value;
};

struct path_map {
	struct slot *slots;
	size_t capacity; /* a power of two */
	size_t count;
	size_t key_bytes;
};

/* FNV-1a, never 0 (0 marks an empty slot). */
static uint64_t hash_of(const void *key, size_t length)
{
	const unsigned char *bytes = key;
	uint64_t hash = 1469598103934665603ull;
	for (size_t i = 0; i < length; i++) {
		hash ^= bytes[i];
		hash *= 1099511628211ull;
	}
	return hash ? hash : 1;
}

struct path_map *path_map_new(void)
{
	struct path_map *map = xcalloc(1, sizeof *map);
	map->capacity = 16;
	map->slots = xcalloc(map->capacity, sizeof *map->slots);
	return map;
}

void path_map_clear(struct path_map *map)
{
	for (size_t i = 0; i < map->capacity; i++)
		if (map->slots[i].hash)
			free(map->slots[i].key);
	memset(map->slots, 0, map->capacity * sizeof *map->slots);
	map->count = 0;
	map->key_bytes = 0;
}

void path_map_free(struct path_map *map)
{
	if (!map)
		return;
	path_map_clear(map);
	free(map->slots);
	free(map);
}

static size_t find(const struct path_map *map, const void *key, size_t length, uint64_t hash)
{
	size_t mask = map->capacity - 1, at = hash & mask;
	while (map->slots[at].hash) {
		const struct slot *slot = &map->slots[at];
		if (slot->hash == hash && slot->length == length &&
		    memcmp(slot->key, key, length) == 0)
			return at;
		at = (at + 1) & mask;
	}
	return at; /* the empty slot where it would go */
}

void *path_map_get(const struct path_map *map, const void *key, size_t length)
{
	size_t at = find(map, key, length, hash_of(key, length));
	return map->slots[at].hash ? map->slots[at].value : NULL;
}

static void grow(struct path_map *map)
{
	struct slot *old = map->slots;
	size_t old_capacity = map->capacity;
	map->capacity *= 2;
	map->slots = xcalloc(map->capacity, sizeof *map->slots);
	for (size_t i = 0; i < old_capacity; i++) {
		if (!old[i].hash)
			continue;
		size_t at = old[i].hash & (map->capacity - 1);
		while (map->slots[at].hash)
			at = (at + 1) & (map->capacity - 1);
		map->slots[at] = old[i];
	}
	free(old);
}

void path_map_put(struct path_map *map, const void *key, size_t length, void *value)
{
	if ((map->count + 1) * 4 > map->capacity * 3)
		grow(map);
	uint64_t hash = hash_of(key, length);
	size_t at = find(map, key, length, hash);
	struct slot *slot = &map->slots[at];
	if (!slot->hash) {
		slot->hash = hash;
		slot->key = xmalloc(length + 1);
		memcpy(slot->key, key, length);
		slot->key[length] = '\0';
		slot->length = length;
		map->count++;
		map->key_bytes += length + 1;
	}
	slot->value = value;
}

void *path_map_remove(struct path_map *map, const void *key, size_t length)
{
	size_t mask = map->capacity - 1, at = find(map, key, length, hash_of(key, length));
	if (!map->slots[at].hash)
		return NULL;
	void *value = map->slots[at].value;
	map->key_bytes -= map->slots[at].length + 1;
	free(map->slots[at].key);
	map->slots[at] = (struct slot){0};
	map->count--;
	/* Backward shift: move up each following entry that probed past the hole. */
	for (size_t next = (at + 1) & mask; map->slots[next].hash; next = (next + 1) & mask) {
		size_t home = map->slots[next].hash & mask;
		bool movable = at <= next ? home <= at || home > next : home <= at && home > next;
		if (movable) {
			map->slots[at] = map->slots[next];
			map->slots[next] = (struct slot){0};
			at = next;
		}
	}
	return value;
}

void **path_map_values(const struct path_map *map)
{
	void **values = xmalloc((map->count + 1) * sizeof *values);
	size_t at = 0;
	for (size_t i = 0; i < map->capacity; i++)
		if (map->slots[i].hash)
			values[at++] = map->slots[i].value;
	return values;
}

size_t path_map_count(const struct path_map *map)
{
	return map->count;
}

size_t path_map_bytes(const struct path_map *map)
{
	return map->capacity * sizeof *map->slots + map->key_bytes + map->count * 16;
}

void *path_map_get_str(const struct path_map *map, const char *key)
{
	return path_map_get(map, key, strlen(key));
}

void path_map_put_str(struct path_map *map, const char *key, void *value)
{
	path_map_put(map, key, strlen(key), value);
}

void *path_map_remove_str(struct path_map *map, const char *key)
{
	return path_map_remove(map, key, strlen(key));
}
