/* shot-cache.h: the last screenshot's encoding, served again while nothing
 * it shows has changed.
 *
 * A shot is keyed by the screen's damage generation read before its grab
 * (screen_damage_generation: the same number later means nothing was drawn
 * since), by every parameter that shapes the file (format, quality, scale,
 * region) and, when the cursor is drawn, by the pointer's position and
 * sprite (moving the pointer is not drawing, so DAMAGE does not see it).
 * The same key means the same bytes: no grab, no encode. One entry: the
 * last encoding, whatever its parameters. Internal to boxd-screen. */
#ifndef BOXD_SHOT_CACHE_H
#define BOXD_SHOT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct shot_key {
	uint64_t generation;
	int screen_width, screen_height;
	int format, quality;
	double scale;
	long x, y, width, height;
	bool cursor;
	int cursor_x, cursor_y;      /* when `cursor` */
	unsigned long cursor_serial; /* when `cursor` */
};

struct shot_cache {
	bool valid;
	struct shot_key key;
	uint8_t *data;
	size_t length;
	int width, height;
	/* Shots answered from here, and shots encoded (for `status`). */
	unsigned long hits, encodes;
};

/* The cached bytes for `key`, or NULL. */
const struct shot_cache *shot_cache_find(struct shot_cache *cache, const struct shot_key *key);
/* Keeps `data` (taken over) as the encoding for `key`. */
void shot_cache_store(struct shot_cache *cache, const struct shot_key *key, uint8_t *data,
		      size_t length, int width, int height);
void shot_cache_clear(struct shot_cache *cache);

#endif
