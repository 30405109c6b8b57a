/* path-map.h: a hash table from byte strings (paths, watch descriptors) to
 * pointers, for the changes journal and its watcher, where lookups by path
 * happen once per file event and must not cost a walk of a list. */
#ifndef BOXD_PATH_MAP_H
#define BOXD_PATH_MAP_H

#include <stdbool.h>
#include <stddef.h>

struct path_map;

struct path_map *path_map_new(void);
void path_map_free(struct path_map *map);
/* The value under `key` (`length` bytes), or NULL. */
void *path_map_get(const struct path_map *map, const void *key, size_t length);
/* Sets (or replaces) the value; the map keeps its own copy of the key. */
void path_map_put(struct path_map *map, const void *key, size_t length, void *value);
/* Removes the key; returns its value, or NULL when it was not there. */
void *path_map_remove(struct path_map *map, const void *key, size_t length);
size_t path_map_count(const struct path_map *map);
/* Forgets every key (values are the caller's). */
void path_map_clear(struct path_map *map);
/* Every value, in no order, in a new array of path_map_count() (caller
 * frees): for changing the map while going through what it held. */
void **path_map_values(const struct path_map *map);
/* The map's own memory: its table and key copies, in bytes. */
size_t path_map_bytes(const struct path_map *map);

/* String keys: the same calls with strlen(key). */
void *path_map_get_str(const struct path_map *map, const char *key);
void path_map_put_str(struct path_map *map, const char *key, void *value);
void *path_map_remove_str(struct path_map *map, const char *key);

#endif
