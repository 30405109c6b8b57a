/* screen-encode.h: turns a grabbed picture into a PNG or JPEG file's bytes,
 * scaled on the way (libswscale) and encoded by libavcodec. Keeps its
 * converter and codec between calls of the same size and settings, since a
 * caller usually takes many shots alike. Not thread-safe: one per thread. */
#ifndef BOXD_SCREEN_ENCODE_H
#define BOXD_SCREEN_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "screen.h"

enum shot_format { SHOT_FORMAT_PNG, SHOT_FORMAT_JPEG };

struct screen_encoder;

struct screen_encoder *screen_encoder_new(void);
void screen_encoder_free(struct screen_encoder *encoder);

/* Encodes `image` scaled to out_width x out_height (`quality` 1..100 for
 * JPEG, ignored for PNG). On success *data is malloc'd (caller frees). */
bool screen_encode(struct screen_encoder *encoder, const struct screen_image *image,
		   enum shot_format format, int quality, int out_width, int out_height,
		   uint8_t **data, size_t *length, char *error, size_t error_size);

#endif
