/* screen-png.h: the worker's own PNG writer, made for screenshots.
 *
 * RGB, 8 bits a channel, the Paeth predictor on every row, zlib level 3:
 * files no larger than scrot's (docs/performance.md). The picture is cut
 * into strips of rows, each deflated on its own (a full flush between
 * them, one valid zlib stream); a strip whose pixels (and the row above
 * it, which its predictor reads) are the same as in the last picture of
 * the same size is not encoded again: its compressed bytes are reused. So
 * a screen where a cursor blinks or a line of text changes costs the strips
 * that changed, not the whole screen. Not thread-safe: one per thread. */
#ifndef BOXD_SCREEN_PNG_H
#define BOXD_SCREEN_PNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How the pixels of a row are laid out. */
enum screen_png_input {
	SCREEN_PNG_BGR0,  /* 4 bytes a pixel: blue, green, red, unused */
	SCREEN_PNG_RGB0,  /* 4 bytes a pixel: red, green, blue, unused */
	SCREEN_PNG_RGB24, /* 3 bytes a pixel */
};

struct screen_png;

struct screen_png_stats {
	int strips;        /* strips in the last picture */
	int strips_reused; /* of which reused from the one before */
};

struct screen_png *screen_png_new(void);
void screen_png_free(struct screen_png *png);

/* Encodes a width x height picture whose rows start `stride` bytes apart.
 * On success *data is malloc'd (caller frees). */
bool screen_png_encode(struct screen_png *png, const uint8_t *pixels, int width, int height,
		       size_t stride, enum screen_png_input input, uint8_t **data, size_t *length,
		       char *error, size_t error_size);

/* What the last encode did (for diagnostics and benchmarks). */
void screen_png_last_stats(const struct screen_png *png, struct screen_png_stats *stats);

#endif
