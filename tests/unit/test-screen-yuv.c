/* Unit tests for the recording's and live view's colour conversion
 * (screen-yuv.c): exact values for pure colours, both input layouts,
 * agreement with swscale's BGR0/RGB0 to YUV420P (the conversion it
 * replaced) within one step, converting all rows or only some; and the
 * tracker: whatever changes, the frame in turn ends up exactly the whole
 * conversion of the last picture, with one frame or two taking turns. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libswscale/swscale.h>

#include "screen-yuv.h"

#include "check.h"

enum { WIDTH = 64, HEIGHT = 32 };

struct planes_buffer {
	uint8_t y[WIDTH * HEIGHT], u[WIDTH * HEIGHT / 4], v[WIDTH * HEIGHT / 4];
	struct yuv_planes planes;
};

static void planes_init(struct planes_buffer *buffer, uint8_t fill)
{
	memset(buffer->y, fill, sizeof buffer->y);
	memset(buffer->u, fill, sizeof buffer->u);
	memset(buffer->v, fill, sizeof buffer->v);
	buffer->planes = (struct yuv_planes){
		.data = {buffer->y, buffer->u, buffer->v},
		.linesize = {WIDTH, WIDTH / 2, WIDTH / 2},
		.width = WIDTH,
		.height = HEIGHT,
	};
}

static void fill(uint8_t *pixels, enum screen_layout layout, int r, int g, int b)
{
	for (int i = 0; i < WIDTH * HEIGHT; i++) {
		uint8_t *p = pixels + i * 4;
		p[0] = (uint8_t)(layout == SCREEN_LAYOUT_BGR0 ? b : r);
		p[1] = (uint8_t)g;
		p[2] = (uint8_t)(layout == SCREEN_LAYOUT_BGR0 ? r : b);
		p[3] = 0;
	}
}

static void pure_colours(void)
{
	/* BT.601 limited range: the values every decoder turns back into these colours. */
	static const struct {
		int r, g, b, y, u, v;
	} colours[] = {
		{0, 0, 0, 16, 128, 128},   {255, 255, 255, 235, 128, 128},
		{255, 0, 0, 81, 90, 240},  {0, 255, 0, 145, 54, 34},
		{0, 0, 255, 41, 240, 110}, {128, 128, 128, 126, 128, 128},
	};
	static uint8_t pixels[WIDTH * HEIGHT * 4];
	static struct planes_buffer out;
	for (int layout = 0; layout < 2; layout++) {
		for (size_t i = 0; i < sizeof colours / sizeof colours[0]; i++) {
			fill(pixels, (enum screen_layout)layout, colours[i].r, colours[i].g,
			     colours[i].b);
			struct screen_image image = {pixels, WIDTH, HEIGHT, WIDTH * 4,
						     (enum screen_layout)layout};
			planes_init(&out, 0);
			screen_yuv_rows(&image, &out.planes, 0, HEIGHT);
			CHECKF(out.y[0] == colours[i].y &&
				       out.y[WIDTH * HEIGHT - 1] == colours[i].y,
			       "colour %zu layout %d: Y %d", i, layout, out.y[0]);
			CHECKF(out.u[0] == colours[i].u && out.v[0] == colours[i].v,
			       "colour %zu layout %d: U %d V %d", i, layout, out.u[0], out.v[0]);
		}
	}
}

static int worst_difference(const uint8_t *a, const uint8_t *b, size_t length)
{
	int worst = 0;
	for (size_t i = 0; i < length; i++) {
		int d = abs((int)a[i] - (int)b[i]);
		worst = d > worst ? d : worst;
	}
	return worst;
}

static void against_swscale(enum screen_layout layout)
{
	static uint8_t pixels[WIDTH * HEIGHT * 4];
	/* Gradients in both directions with some noise on top: chroma filters
	 * that differ in their taps agree on smooth pictures, which screens are
	 * (noise alone would measure the filters, not the colours). */
	srand(7 + (unsigned)layout);
	for (int row = 0; row < HEIGHT; row++)
		for (int x = 0; x < WIDTH; x++)
			for (int c = 0; c < 4; c++)
				pixels[(row * WIDTH + x) * 4 + c] =
					(uint8_t)(x * (c + 1) / 2 + row * (4 - c) + c * 10 +
						  rand() % 4);
	struct screen_image image = {pixels, WIDTH, HEIGHT, WIDTH * 4, layout};
	static struct planes_buffer ours, theirs;
	planes_init(&ours, 0);
	screen_yuv_rows(&image, &ours.planes, 0, HEIGHT);
	planes_init(&theirs, 0);
	struct SwsContext *scaler = sws_getContext(
		WIDTH, HEIGHT, layout == SCREEN_LAYOUT_BGR0 ? AV_PIX_FMT_BGR0 : AV_PIX_FMT_RGB0,
		WIDTH, HEIGHT, AV_PIX_FMT_YUV420P, SWS_BILINEAR, NULL, NULL, NULL);
	CHECK(scaler != NULL);
	const uint8_t *source[4] = {pixels};
	int source_stride[4] = {WIDTH * 4};
	sws_scale(scaler, source, source_stride, 0, HEIGHT, theirs.planes.data,
		  theirs.planes.linesize);
	sws_freeContext(scaler);
	int y = worst_difference(ours.y, theirs.y, sizeof ours.y);
	int u = worst_difference(ours.u, theirs.u, sizeof ours.u);
	int v = worst_difference(ours.v, theirs.v, sizeof ours.v);
	CHECKF(y <= 1 && u <= 1 && v <= 1, "layout %d: worst differences Y %d U %d V %d", layout, y,
	       u, v);
}

/* Rows outside [y0, y1) stay as they were: the recording converts only
 * the bands that changed. */
static void only_the_rows_given(void)
{
	static uint8_t pixels[WIDTH * HEIGHT * 4];
	fill(pixels, SCREEN_LAYOUT_BGR0, 255, 255, 255);
	struct screen_image image = {pixels, WIDTH, HEIGHT, WIDTH * 4, SCREEN_LAYOUT_BGR0};
	static struct planes_buffer out;
	planes_init(&out, 7);
	screen_yuv_rows(&image, &out.planes, 8, 16);
	bool inside = true, outside = true;
	for (int row = 0; row < HEIGHT; row++) {
		bool in = row >= 8 && row < 16;
		for (int x = 0; x < WIDTH; x++) {
			uint8_t y = out.y[row * WIDTH + x];
			*(in ? &inside : &outside) &= y == (in ? 235 : 7);
		}
		if (row % 2 == 0)
			for (int x = 0; x < WIDTH / 2; x++) {
				uint8_t u = out.u[row / 2 * WIDTH / 2 + x];
				*(in ? &inside : &outside) &= u == (in ? 128 : 7);
			}
	}
	CHECK(inside);
	CHECK(outside);
}

enum { TALL = 64 }; /* four bands of 16 rows */

static uint8_t tall_pixels[WIDTH * TALL * 4];
static const struct screen_image tall_image = {tall_pixels, WIDTH, TALL, WIDTH * 4,
					       SCREEN_LAYOUT_BGR0};

struct tall_planes {
	uint8_t y[WIDTH * TALL], u[WIDTH * TALL / 4], v[WIDTH * TALL / 4];
	struct yuv_planes planes;
};

static void tall_init(struct tall_planes *buffer)
{
	memset(buffer->y, 0x55, sizeof buffer->y);
	memset(buffer->u, 0x55, sizeof buffer->u);
	memset(buffer->v, 0x55, sizeof buffer->v);
	buffer->planes = (struct yuv_planes){
		.data = {buffer->y, buffer->u, buffer->v},
		.linesize = {WIDTH, WIDTH / 2, WIDTH / 2},
		.width = WIDTH,
		.height = TALL,
	};
}

/* The frame equals a whole conversion of the picture now. */
static bool tall_exact(const struct tall_planes *frame)
{
	static struct tall_planes whole;
	tall_init(&whole);
	screen_yuv_rows(&tall_image, &whole.planes, 0, TALL);
	return !memcmp(frame->y, whole.y, sizeof whole.y) &&
	       !memcmp(frame->u, whole.u, sizeof whole.u) &&
	       !memcmp(frame->v, whole.v, sizeof whole.v);
}

/* Paints rows [y0, y1) one colour. */
static void paint(int y0, int y1, uint8_t value)
{
	memset(tall_pixels + (size_t)y0 * WIDTH * 4, value, (size_t)(y1 - y0) * WIDTH * 4);
}

static void tracker_takes_turns(int frames)
{
	static struct tall_planes buffers[2];
	tall_init(&buffers[0]);
	tall_init(&buffers[1]);
	paint(0, TALL, 10);
	struct yuv_tracker *tracker = yuv_tracker_new(frames);
	/* Each step changes something else: a band, two, a row at a band's
	 * edge, nothing, everything. */
	static const struct {
		int y0, y1;
		uint8_t value;
		bool differs;
	} steps[] = {
		{0, 0, 0, true}, /* the first picture: everything is new */
		{16, 32, 200, true}, {0, 0, 0, false},   {40, 56, 90, true}, {31, 33, 250, true},
		{0, 0, 0, false},    {0, 64, 128, true}, {63, 64, 1, true},  {0, 0, 0, false},
	};
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		if (steps[i].y1 > steps[i].y0)
			paint(steps[i].y0, steps[i].y1, steps[i].value);
		struct tall_planes *turn = &buffers[i % (size_t)frames];
		bool differs = yuv_tracker_update(tracker, &tall_image, &turn->planes);
		CHECKF(differs == steps[i].differs, "%d frames, step %zu: differs %d", frames, i,
		       differs);
		CHECKF(tall_exact(turn), "%d frames, step %zu: the frame is not the picture",
		       frames, i);
	}
	/* Frames filled some other way: after forget, each is made whole again. */
	memset(buffers[0].y, 0, sizeof buffers[0].y);
	memset(buffers[1].u, 0, sizeof buffers[1].u);
	yuv_tracker_forget(tracker);
	for (int i = 0; i < frames; i++) {
		struct tall_planes *turn = &buffers[i];
		/* Only the first turn counts as a new picture: the same one after. */
		CHECK(yuv_tracker_update(tracker, &tall_image, &turn->planes) == (i == 0));
		CHECKF(tall_exact(turn), "%d frames, after forget, turn %d", frames, i);
	}
	yuv_tracker_free(tracker);
}

int main(void)
{
	pure_colours();
	against_swscale(SCREEN_LAYOUT_BGR0);
	against_swscale(SCREEN_LAYOUT_RGB0);
	only_the_rows_given();
	tracker_takes_turns(1);
	tracker_takes_turns(2);
	return check_done("screen-yuv");
}
