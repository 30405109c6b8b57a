/* screen-yuv.c: RGB to 4:2:0 YUV, the conversion swscale made for the
 * recording (BT.601 limited range, the colour space a player assumes for
 * an untagged H.264 stream of this size), on two rows at a time so each
 * 2x2 block's chroma comes from its four pixels. */
#include "screen-yuv.h"

/* The BT.601 studio-swing matrix in fixed point, 15 fractional bits (8
 * are a step off for pure green). */
enum {
	Y_R = 8414, Y_G = 16519, Y_B = 3208,
	U_R = -4865, U_G = -9528, U_B = 14392,
	V_R = 14392, V_G = -12061, V_B = -2332,
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
__attribute__((optimize("tree-vectorize"))) static inline void
pair(const uint8_t *restrict top, const uint8_t *restrict bottom, uint8_t *restrict y_top,
     uint8_t *restrict y_bottom, uint8_t *restrict u, uint8_t *restrict v, int width, int red,
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
