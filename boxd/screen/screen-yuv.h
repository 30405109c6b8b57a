/* screen-yuv.h: a grab's rows as 4:2:0 YUV (BT.601, limited range), the
 * encoders' input, converted only where the screen changed.
 *
 * swscale converted the whole screen for every frame: half the CPU of a
 * recording or a live view in which a small part of the screen moves. */
#ifndef BOXD_SCREEN_YUV_H
#define BOXD_SCREEN_YUV_H

#include <stdbool.h>
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

/* Keeps a few frames (`frames` of them, used in turn: 1 for a recording,
 * 2 for a live view whose encoder reads one while the other is filled) up
 * to date with the grabs, converting only the 16-row bands that differ
 * from what the frame being filled holds. */
struct yuv_tracker;
struct yuv_tracker *yuv_tracker_new(int frames);
void yuv_tracker_free(struct yuv_tracker *tracker);
/* The frames hold something else now (filled another way): the next turn
 * of each converts whole. */
void yuv_tracker_forget(struct yuv_tracker *tracker);
/* Fills `planes`, the next frame in turn, with `image` (the same size as
 * the planes, or larger). True when the image differs from the last one
 * given (false: the frame was already up to date, nothing converted). */
bool yuv_tracker_update(struct yuv_tracker *tracker, const struct screen_image *image,
			const struct yuv_planes *planes);

#endif
