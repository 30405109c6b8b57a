/* screen-yuv.h: a grab's rows as 4:2:0 YUV (BT.601, limited range), the
 * encoders' input.
 *
 * The recording converts only the rows that changed since its last frame:
 * swscale, which converted the whole screen for every frame, was half the
 * recording's CPU while a small part of the screen moved. */
#ifndef BOXD_SCREEN_YUV_H
#define BOXD_SCREEN_YUV_H

#include <stdint.h>

#include "screen.h"

struct yuv_planes {
	uint8_t *data[3]; /* Y, U (Cb), V (Cr) */
	int linesize[3];
	int width, height; /* even: 4:2:0 halves both */
};

/* Converts rows [y0, y1) of `image` (both even, y1 <= planes->height) into
 * the same rows of `planes`; columns beyond planes->width are left out. */
void screen_yuv_rows(const struct screen_image *image, const struct yuv_planes *planes, int y0,
		     int y1);

#endif
