/* shot-cache.c: the last screenshot's encoding (shot-cache.h). */
#include "shot-cache.h"

#include <stdlib.h>

static bool shot_key_equal(const struct shot_key *a, const struct shot_key *b)
{
	if (a->generation != b->generation || a->screen_width != b->screen_width ||
	    a->screen_height != b->screen_height || a->format != b->format ||
	    a->quality != b->quality || a->scale != b->scale || a->x != b->x || a->y != b->y ||
	    a->width != b->width || a->height != b->height || a->cursor != b->cursor)
		return false;
	return !a->cursor || (a->cursor_x == b->cursor_x && a->cursor_y == b->cursor_y &&
			      a->cursor_serial == b->cursor_serial);
}

const struct shot_cache *shot_cache_find(struct shot_cache *cache, const struct shot_key *key)
{
	if (!cache->valid || !shot_key_equal(&cache->key, key))
		return NULL;
	cache->hits++;
	return cache;
}

void shot_cache_store(struct shot_cache *cache, const struct shot_key *key, uint8_t *data,
		      size_t length, int width, int height)
{
	free(cache->data);
	cache->key = *key;
	cache->data = data;
	cache->length = length;
	cache->width = width;
	cache->height = height;
	cache->valid = true;
	cache->encodes++;
}

void shot_cache_clear(struct shot_cache *cache)
{
	free(cache->data);
	cache->data = NULL;
	cache->length = 0;
	cache->valid = false;
}
