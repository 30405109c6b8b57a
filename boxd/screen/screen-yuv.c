/* screen-yuv.c: RGB to 4:2:0 YUV, the conversion swscale made for the
 * recording and the live view (BT.601 limited range, the colour space a
 * player assumes for an untagged H.264 stream of this size), two rows at a
 * time so each 2x2 block's chroma comes from its four pixels; and the
 * tracker that converts only the bands that changed. */
#include "screen-yuv.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"
#include "vectorize.h"

/* The BT.601 studio-swing matrix in fixed point, 15 fractional bits (8
 * are a step off for pure green). */
enum {
	Y_R = 8414,
	Y_G = 16519,
	Y_B = 3208,
	U_R = -4865,
	U_G = -9528,
	U_B = 14392,
	V_R = 14392,
	V_G = -12061,
	V_B = -2332,
};

static inline uint8_t luma(int r, int g, int b)
{
	return (uint8_t)(((Y_R * r + Y_G * g + Y_B * b + (1 << 14)) >> 15) + 16);
}

/* r, g, b are sums of four pixels: two more fractional bits. */
static inline uint8_t chroma(int cr, int cg, int cb, int r, int g, int b)
{
	return (uint8_t)(((cr * r + cg * g + cb * b + (1 << 16)) >> 17) + 128);
}

/* One pair of rows. `red` and `blue` are the byte offsets of those channels
 * in a pixel (green is always 1): constants in each caller, so the loop is
 * straight code the compiler can vectorise. */
VECTORIZE static inline void pair(const uint8_t *restrict top, const uint8_t *restrict bottom,
				  uint8_t *restrict y_top, uint8_t *restrict y_bottom,
				  uint8_t *restrict u, uint8_t *restrict v, int width, int red,
				  int blue)
{
	for (int x = 0; x < width; x += 2) {
		const uint8_t *a = top + x * 4, *b = top + x * 4 + 4;
		const uint8_t *c = bottom + x * 4, *d = bottom + x * 4 + 4;
		y_top[x] = luma(a[red], a[1], a[blue]);
		y_top[x + 1] = luma(b[red], b[1], b[blue]);
		y_bottom[x] = luma(c[red], c[1], c[blue]);
		y_bottom[x + 1] = luma(d[red], d[1], d[blue]);
		int r = a[red] + b[red] + c[red] + d[red];
		int g = a[1] + b[1] + c[1] + d[1];
		int bl = a[blue] + b[blue] + c[blue] + d[blue];
		u[x / 2] = chroma(U_R, U_G, U_B, r, g, bl);
		v[x / 2] = chroma(V_R, V_G, V_B, r, g, bl);
	}
}

void screen_yuv_rows(const struct screen_image *image, const struct yuv_planes *planes, int y0,
		     int y1)
{
	bool bgr = image->layout == SCREEN_LAYOUT_BGR0;
	for (int row = y0; row + 1 < y1; row += 2) {
		const uint8_t *top = image->pixels + (size_t)row * (size_t)image->stride;
		const uint8_t *bottom = top + image->stride;
		uint8_t *y_top = planes->data[0] + (size_t)row * (size_t)planes->linesize[0];
		uint8_t *y_bottom = y_top + planes->linesize[0];
		uint8_t *u = planes->data[1] + (size_t)(row / 2) * (size_t)planes->linesize[1];
		uint8_t *v = planes->data[2] + (size_t)(row / 2) * (size_t)planes->linesize[2];
		if (bgr)
			pair(top, bottom, y_top, y_bottom, u, v, planes->width, 2, 0);
		else
			pair(top, bottom, y_top, y_bottom, u, v, planes->width, 0, 2);
	}
}

/* Rows compared, copied and converted together; even, since 4:2:0 pairs rows. */
#define BAND_ROWS 16
/* Frames used in turn, at most. */
#define TRACKER_MAX_FRAMES 2

struct yuv_tracker {
	int frames;        /* how many take turns */
	uint8_t *previous; /* the last image given, to compare bands with */
	size_t previous_size;
	int bands;
	/* changed[k][b]: band b differed k+1 turns ago; the frame in turn
	 * missed the changes of the last `frames - 1` turns. */
	bool *changed[TRACKER_MAX_FRAMES];
	bool fresh; /* `previous` holds nothing yet: every band differs */
};

struct yuv_tracker *yuv_tracker_new(int frames)
{
	struct yuv_tracker *tracker = xcalloc(1, sizeof *tracker);
	tracker->frames = frames < 1                    ? 1
			  : frames > TRACKER_MAX_FRAMES ? TRACKER_MAX_FRAMES
							: frames;
	tracker->fresh = true;
	return tracker;
}

void yuv_tracker_free(struct yuv_tracker *tracker)
{
	if (!tracker)
		return;
	free(tracker->previous);
	for (int k = 0; k < TRACKER_MAX_FRAMES; k++)
		free(tracker->changed[k]);
	free(tracker);
}

void yuv_tracker_forget(struct yuv_tracker *tracker)
{
	tracker->fresh = true;
}

/* Sizes the comparison copy and the band records for `image`; a new size
 * starts over. */
static void tracker_fit(struct yuv_tracker *tracker, const struct screen_image *image, int height)
{
	size_t size = (size_t)image->stride * (size_t)image->height;
	int bands = (height + BAND_ROWS - 1) / BAND_ROWS;
	if (tracker->previous_size == size && tracker->bands == bands)
		return;
	free(tracker->previous);
	tracker->previous = xmalloc(size);
	tracker->previous_size = size;
	tracker->bands = bands;
	for (int k = 0; k < TRACKER_MAX_FRAMES; k++) {
		free(tracker->changed[k]);
		tracker->changed[k] = xcalloc((size_t)bands, sizeof(bool));
	}
	tracker->fresh = true;
}

bool yuv_tracker_update(struct yuv_tracker *tracker, const struct screen_image *image,
			const struct yuv_planes *planes)
{
	tracker_fit(tracker, image, planes->height);
	/* Fresh: every band differs, so each frame in turn, which has seen
	 * none of it, converts whole (through the changed records). */
	bool fresh = tracker->fresh;
	tracker->fresh = false;
	/* The oldest record makes room for this turn's. */
	bool *now = tracker->changed[tracker->frames - 1];
	for (int k = tracker->frames - 1; k > 0; k--)
		tracker->changed[k] = tracker->changed[k - 1];
	tracker->changed[0] = now;
	bool any = false;
	for (int band = 0; band < tracker->bands; band++) {
		int y0 = band * BAND_ROWS;
		int y1 = y0 + BAND_ROWS < planes->height ? y0 + BAND_ROWS : planes->height;
		size_t at = (size_t)y0 * (size_t)image->stride;
		size_t length = (size_t)(y1 - y0) * (size_t)image->stride;
		now[band] =
			fresh || memcmp(tracker->previous + at, image->pixels + at, length) != 0;
		if (now[band])
			memcpy(tracker->previous + at, image->pixels + at, length);
		any |= now[band];
		bool stale = now[band];
		for (int k = 1; k < tracker->frames; k++) {
			const bool *record = tracker->changed[k];
			stale |= record && record[band]; /* none yet: nothing missed */
		}
		if (stale)
			screen_yuv_rows(image, planes, y0, y1);
	}
	return any;
}
