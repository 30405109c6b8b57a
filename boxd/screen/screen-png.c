/* screen-png.c: PNG for screenshots: Paeth rows, zlib strips, strips reused.
 *
 * The stream: a zlib header, then per strip the raw deflate of its filtered
 * rows ended by a full flush (byte-aligned, no history carried over, so any
 * strip can be made on its own), then an empty final block and the Adler-32
 * of all filtered rows (adler32_combine of the strips'). */
#include "screen-png.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "text.h"
#include "xalloc.h"
#include "vectorize.h"

/* Rows a strip. Smaller strips reuse more of a screen where little changed
 * but lose more to the flushes (the dictionary starts empty in each):
 * 32 rows of 1280 pixels cost 1 % in size against one stream (63.9 KB
 * against 63.3 KB on the benchmark screen; scrot: 65.4 KB). */
#define SCREEN_PNG_STRIP_ROWS 32
/* zlib level 3: with Paeth, no larger than scrot's level 2 with libpng's
 * per-row filter choice, at a fraction of its time; level 4's lazy
 * matching doubles the time. */
#define SCREEN_PNG_LEVEL 3
/* Strips are made on this many threads (the calling one and helpers) when
 * there are enough of them: a whole 1280x800 screen in about half the time
 * on two free cores; no worse on a busy machine than one thread plus a
 * thread start. */
#define SCREEN_PNG_LANES 2
#define SCREEN_PNG_STRIPS_TO_SHARE 4

struct screen_png_strip {
	uint8_t *data; /* raw deflate, ending in a full flush */
	size_t length;
	uint32_t adler; /* of this strip's filtered rows */
	bool stale;     /* to be made again for the picture at hand */
};

/* What one thread needs to make strips: its deflate stream, two RGB rows
 * and one strip of filtered rows. */
struct screen_png_lane {
	struct screen_png *png;
	z_stream zlib;
	bool zlib_ready;
	uint8_t *rgb[2];
	uint8_t *filtered;
	/* The work of one encode: strips [first, end) that are stale. */
	const uint8_t *pixels;
	size_t stride;
	int first, end;
	bool ok;
	char error[128];
};

struct screen_png {
	struct screen_png_lane lanes[SCREEN_PNG_LANES];
	/* The last picture, to tell which strips changed. */
	int width, height;
	enum screen_png_input input;
	size_t row_bytes;  /* of the input: width * 3 or 4 */
	uint8_t *previous; /* height rows of row_bytes, packed */
	struct screen_png_strip *strips;
	int strip_count;
	struct screen_png_stats stats;
};

struct screen_png *screen_png_new(void)
{
	struct screen_png *png = xcalloc(1, sizeof(struct screen_png));
	for (int i = 0; i < SCREEN_PNG_LANES; i++)
		png->lanes[i].png = png;
	return png;
}

static void screen_png_lane_forget(struct screen_png_lane *lane)
{
	free(lane->rgb[0]);
	free(lane->rgb[1]);
	free(lane->filtered);
	lane->rgb[0] = lane->rgb[1] = lane->filtered = NULL;
}

static void screen_png_forget(struct screen_png *png)
{
	for (int i = 0; i < png->strip_count; i++)
		free(png->strips[i].data);
	free(png->strips);
	free(png->previous);
	for (int i = 0; i < SCREEN_PNG_LANES; i++)
		screen_png_lane_forget(&png->lanes[i]);
	png->strips = NULL;
	png->previous = NULL;
	png->strip_count = 0;
	png->width = png->height = 0;
}

void screen_png_free(struct screen_png *png)
{
	if (!png)
		return;
	screen_png_forget(png);
	for (int i = 0; i < SCREEN_PNG_LANES; i++)
		if (png->lanes[i].zlib_ready)
			deflateEnd(&png->lanes[i].zlib);
	free(png);
}

void screen_png_last_stats(const struct screen_png *png, struct screen_png_stats *stats)
{
	*stats = png->stats;
}

/* One input row as RGB. */
static void screen_png_row_rgb(const uint8_t *restrict in, uint8_t *restrict out, int width,
			       enum screen_png_input input)
{
	if (input == SCREEN_PNG_RGB24) {
		memcpy(out, in, (size_t)width * 3);
		return;
	}
	int red = input == SCREEN_PNG_BGR0 ? 2 : 0, blue = 2 - red;
	for (int x = 0; x < width; x++) {
		out[3 * x] = in[4 * x + red];
		out[3 * x + 1] = in[4 * x + 1];
		out[3 * x + 2] = in[4 * x + blue];
	}
}

/* PNG filter type 4 on one row: each byte minus the one of its left (a),
 * upper (b) and upper-left (c) neighbours nearest to a + b - c. Written
 * without branches on 16-bit lanes so the compiler vectorises it. */
VECTORIZE
static void screen_png_paeth(const uint8_t *restrict row, const uint8_t *restrict above,
			     uint8_t *restrict out, size_t length)
{
	for (size_t i = 0; i < 3 && i < length; i++)
		out[i] = (uint8_t)(row[i] - above[i]);
	for (size_t i = 3; i < length; i++) {
		int16_t a = row[i - 3], b = above[i], c = above[i - 3];
		int16_t pa = (int16_t)(b - c), pb = (int16_t)(a - c);
		int16_t pc = (int16_t)(pa + pb);
		pa = pa < 0 ? (int16_t)-pa : pa;
		pb = pb < 0 ? (int16_t)-pb : pb;
		pc = pc < 0 ? (int16_t)-pc : pc;
		int16_t near_bc = pb <= pc ? b : c;
		int16_t predicted = (pa <= pb && pa <= pc) ? a : near_bc;
		out[i] = (uint8_t)(row[i] - predicted);
	}
}

/* The lane's deflate stream and buffers for pictures `width` wide. */
static bool screen_png_lane_ready(struct screen_png_lane *lane, int width, char *error,
				  size_t error_size)
{
	if (!lane->zlib_ready) {
		/* Raw deflate (negative window bits): the wrapper is written here. */
		if (deflateInit2(&lane->zlib, SCREEN_PNG_LEVEL, Z_DEFLATED, -15, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
			return text_fail(error, error_size, "cannot start zlib");
		lane->zlib_ready = true;
	}
	if (!lane->filtered) {
		lane->rgb[0] = xmalloc((size_t)width * 3);
		lane->rgb[1] = xmalloc((size_t)width * 3);
		lane->filtered = xmalloc(((size_t)width * 3 + 1) * SCREEN_PNG_STRIP_ROWS);
	}
	return true;
}

/* Filters and deflates rows [first, end) into `strip`. */
static bool screen_png_make_strip(struct screen_png_lane *lane, const uint8_t *pixels,
				  size_t stride, int first, int end, struct screen_png_strip *strip,
				  char *error, size_t error_size)
{
	const struct screen_png *png = lane->png;
	size_t rgb_bytes = (size_t)png->width * 3;
	uint8_t *above = lane->rgb[0], *row = lane->rgb[1];
	if (first > 0)
		screen_png_row_rgb(pixels + (size_t)(first - 1) * stride, above, png->width,
				   png->input);
	else
		memset(above, 0, rgb_bytes);
	uint8_t *out = lane->filtered;
	for (int y = first; y < end; y++) {
		screen_png_row_rgb(pixels + (size_t)y * stride, row, png->width, png->input);
		*out++ = 4; /* Paeth */
		screen_png_paeth(row, above, out, rgb_bytes);
		out += rgb_bytes;
		uint8_t *swap = above;
		above = row;
		row = swap;
	}
	size_t in_length = (size_t)(out - lane->filtered);
	strip->adler = (uint32_t)adler32(adler32(0, NULL, 0), lane->filtered, (uInt)in_length);
	z_stream *zlib = &lane->zlib;
	deflateReset(zlib);
	size_t bound = deflateBound(zlib, in_length) + 16;
	free(strip->data);
	strip->data = xmalloc(bound);
	zlib->next_in = lane->filtered;
	zlib->avail_in = (uInt)in_length;
	zlib->next_out = strip->data;
	zlib->avail_out = (uInt)bound;
	int status = deflate(zlib, Z_FULL_FLUSH);
	if (status != Z_OK || zlib->avail_in != 0) {
		free(strip->data);
		strip->data = NULL;
		strip->length = 0;
		return text_fail(error, error_size, "zlib failed (%d)", status);
	}
	strip->length = bound - zlib->avail_out;
	strip->data = xrealloc(strip->data, strip->length);
	return true;
}

/* True when rows [first - 1, end) equal the last picture's. */
static bool screen_png_unchanged(const struct screen_png *png, const uint8_t *pixels, size_t stride,
				 int first, int end)
{
	for (int y = first > 0 ? first - 1 : 0; y < end; y++)
		if (memcmp(pixels + (size_t)y * stride, png->previous + (size_t)y * png->row_bytes,
			   png->row_bytes) != 0)
			return false;
	return true;
}

/* Starts over for a picture of another size or layout. */
static void screen_png_resize(struct screen_png *png, int width, int height,
			      enum screen_png_input input)
{
	screen_png_forget(png);
	png->width = width;
	png->height = height;
	png->input = input;
	png->row_bytes = (size_t)width * (input == SCREEN_PNG_RGB24 ? 3 : 4);
	png->previous = xmalloc(png->row_bytes * (size_t)height);
	png->strip_count = (height + SCREEN_PNG_STRIP_ROWS - 1) / SCREEN_PNG_STRIP_ROWS;
	png->strips = xcalloc((size_t)png->strip_count, sizeof *png->strips);
}

static uint8_t *screen_png_put32(uint8_t *at, uint32_t value)
{
	value = htonl(value);
	memcpy(at, &value, 4);
	return at + 4;
}

/* A chunk's length, type and data; its CRC is added by screen_png_end_chunk. */
static uint8_t *screen_png_chunk(uint8_t *at, const char *type, uint32_t length)
{
	at = screen_png_put32(at, length);
	memcpy(at, type, 4);
	return at + 4;
}

static uint8_t *screen_png_end_chunk(uint8_t *at, const uint8_t *type_start)
{
	uLong crc = crc32(crc32(0, NULL, 0), type_start, (uInt)(at - type_start));
	return screen_png_put32(at, (uint32_t)crc);
}

static void screen_png_assemble(struct screen_png *png, uint8_t **data, size_t *length)
{
	size_t deflated = 0;
	uLong adler = adler32(0, NULL, 0);
	for (int i = 0; i < png->strip_count; i++) {
		deflated += png->strips[i].length;
		int first = i * SCREEN_PNG_STRIP_ROWS;
		int end = first + SCREEN_PNG_STRIP_ROWS > png->height
				  ? png->height
				  : first + SCREEN_PNG_STRIP_ROWS;
		z_off_t strip_in = (z_off_t)(end - first) * ((z_off_t)png->width * 3 + 1);
		adler = adler32_combine(adler, png->strips[i].adler, strip_in);
	}
	/* zlib header (deflate, 32 KiB window, level "fast"), strips, an empty
	 * final fixed block, the Adler-32. */
	size_t idat = 2 + deflated + 2 + 4;
	size_t total = 8 + (12 + 13) + (12 + idat) + 12;
	uint8_t *out = xmalloc(total), *at = out;
	memcpy(at, "\x89PNG\r\n\x1a\n", 8);
	at += 8;
	uint8_t *type = at + 4;
	at = screen_png_chunk(at, "IHDR", 13);
	at = screen_png_put32(at, (uint32_t)png->width);
	at = screen_png_put32(at, (uint32_t)png->height);
	memcpy(at, "\x08\x02\x00\x00\x00", 5); /* 8 bits, RGB, deflate, filters, no interlace */
	at = screen_png_end_chunk(at + 5, type);
	type = at + 4;
	at = screen_png_chunk(at, "IDAT", (uint32_t)idat);
	*at++ = 0x78;
	*at++ = 0x5e;
	for (int i = 0; i < png->strip_count; i++) {
		memcpy(at, png->strips[i].data, png->strips[i].length);
		at += png->strips[i].length;
	}
	*at++ = 0x03;
	*at++ = 0x00;
	at = screen_png_put32(at, (uint32_t)adler);
	at = screen_png_end_chunk(at, type);
	type = at + 4;
	at = screen_png_chunk(at, "IEND", 0);
	at = screen_png_end_chunk(at, type);
	*data = out;
	*length = (size_t)(at - out);
}

/* Makes the lane's stale strips, [first, end), and remembers their rows
 * for the next picture (a reused strip's rows are the same already). */
static void *screen_png_lane_run(void *arg)
{
	struct screen_png_lane *lane = arg;
	struct screen_png *png = lane->png;
	lane->ok = true;
	for (int i = lane->first; i < lane->end && lane->ok; i++) {
		if (!png->strips[i].stale)
			continue;
		int first = i * SCREEN_PNG_STRIP_ROWS;
		int end = first + SCREEN_PNG_STRIP_ROWS > png->height
				  ? png->height
				  : first + SCREEN_PNG_STRIP_ROWS;
		lane->ok = screen_png_make_strip(lane, lane->pixels, lane->stride, first, end,
						 &png->strips[i], lane->error, sizeof lane->error);
		for (int y = first; y < end && lane->ok; y++)
			memcpy(png->previous + (size_t)y * png->row_bytes,
			       lane->pixels + (size_t)y * lane->stride, png->row_bytes);
	}
	return NULL;
}

/* Shares the stale strips out between the lanes, half of them each (by
 * count), and makes them; the calling thread is the first lane. */
static bool screen_png_make_stale(struct screen_png *png, const uint8_t *pixels, size_t stride,
				  int stale, char *error, size_t error_size)
{
	int lanes = stale >= SCREEN_PNG_STRIPS_TO_SHARE ? SCREEN_PNG_LANES : 1;
	int at = 0, taken = 0;
	for (int l = 0; l < lanes; l++) {
		struct screen_png_lane *lane = &png->lanes[l];
		if (!screen_png_lane_ready(lane, png->width, error, error_size))
			return false;
		lane->pixels = pixels;
		lane->stride = stride;
		lane->first = at;
		/* Up to this many stale strips are done by the end of this lane. */
		int goal = stale * (l + 1) / lanes;
		if (l == lanes - 1)
			at = png->strip_count;
		while (at < png->strip_count && taken < goal)
			taken += png->strips[at++].stale;
		lane->end = at;
	}
	pthread_t helpers[SCREEN_PNG_LANES];
	bool started[SCREEN_PNG_LANES] = {false};
	for (int l = 1; l < lanes; l++)
		started[l] =
			pthread_create(&helpers[l], NULL, screen_png_lane_run, &png->lanes[l]) == 0;
	screen_png_lane_run(&png->lanes[0]);
	bool ok = png->lanes[0].ok;
	const char *why = png->lanes[0].error;
	for (int l = 1; l < lanes; l++) {
		if (started[l])
			pthread_join(helpers[l], NULL);
		else
			screen_png_lane_run(&png->lanes[l]); /* no thread: done here */
		if (ok && !png->lanes[l].ok) {
			ok = false;
			why = png->lanes[l].error;
		}
	}
	if (!ok)
		snprintf(error, error_size, "%s", why);
	return ok;
}

bool screen_png_encode(struct screen_png *png, const uint8_t *pixels, int width, int height,
		       size_t stride, enum screen_png_input input, uint8_t **data, size_t *length,
		       char *error, size_t error_size)
{
	if (width < 1 || height < 1)
		return text_fail(error, error_size, "a %dx%d picture is empty", width, height);
	bool fresh = png->width != width || png->height != height || png->input != input;
	if (fresh)
		screen_png_resize(png, width, height, input);
	/* Which strips changed, all decided against the last picture before
	 * any of its rows are overwritten (a strip reads the row above it). */
	int stale = 0;
	for (int i = 0; i < png->strip_count; i++) {
		int first = i * SCREEN_PNG_STRIP_ROWS;
		int end = first + SCREEN_PNG_STRIP_ROWS > height ? height
								 : first + SCREEN_PNG_STRIP_ROWS;
		png->strips[i].stale = fresh || !png->strips[i].data ||
				       !screen_png_unchanged(png, pixels, stride, first, end);
		stale += png->strips[i].stale;
	}
	png->stats.strips = png->strip_count;
	png->stats.strips_reused = png->strip_count - stale;
	if (stale && !screen_png_make_stale(png, pixels, stride, stale, error, error_size)) {
		/* Nothing half-made is reused: the next picture starts over. */
		png->width = 0;
		return false;
	}
	screen_png_assemble(png, data, length);
	return true;
}
