/* Unit tests for the screenshot PNG writer (screen-png.c): each file is
 * decoded here independently (chunk CRCs, one zlib stream inflated whole,
 * Paeth undone) and compared with the pixels given, through sizes that do
 * not fill a strip, all three input layouts, and pictures that change in a
 * few strips (reused) or everywhere (two threads). */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "screen-png.h"

#include "check.h"

static uint32_t get32(const uint8_t *at)
{
	uint32_t value;
	memcpy(&value, at, 4);
	return ntohl(value);
}

static int paeth(int a, int b, int c)
{
	int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
	return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Decodes `png` into RGB (width * height * 3). False when anything about
 * the file is wrong. */
static bool decode(const uint8_t *png, size_t length, int width, int height, uint8_t *rgb)
{
	if (length < 8 + 25 + 12 || memcmp(png, "\x89PNG\r\n\x1a\n", 8) != 0)
		return false;
	size_t at = 8, idat_length = 0;
	const uint8_t *idat = NULL;
	bool ended = false;
	while (at + 12 <= length) {
		uint32_t size = get32(png + at);
		const uint8_t *type = png + at + 4;
		if (at + 12 + size > length)
			return false;
		if (get32(type + 4 + size) != (uint32_t)crc32(0, type, size + 4))
			return false;
		if (memcmp(type, "IHDR", 4) == 0 &&
		    (get32(type + 4) != (uint32_t)width || get32(type + 8) != (uint32_t)height ||
		     memcmp(type + 12, "\x08\x02\x00\x00\x00", 5) != 0))
			return false;
		if (memcmp(type, "IDAT", 4) == 0) {
			idat = type + 4;
			idat_length = size;
		}
		ended = memcmp(type, "IEND", 4) == 0;
		at += 12 + size;
	}
	if (!idat || !ended || at != length)
		return false;
	size_t row = (size_t)width * 3 + 1;
	uLongf raw_length = row * (size_t)height;
	uint8_t *raw = malloc(raw_length + 1);
	uLongf got = raw_length + 1;
	/* uncompress checks the zlib header and the Adler-32 too. */
	bool ok = uncompress(raw, &got, idat, idat_length) == Z_OK && got == raw_length;
	for (int y = 0; ok && y < height; y++) {
		const uint8_t *line = raw + (size_t)y * row;
		ok = line[0] == 4;
		uint8_t *out = rgb + (size_t)y * width * 3;
		const uint8_t *above = y ? out - (size_t)width * 3 : NULL;
		for (int i = 0; ok && i < width * 3; i++) {
			int a = i >= 3 ? out[i - 3] : 0, b = above ? above[i] : 0;
			int c = above && i >= 3 ? above[i - 3] : 0;
			out[i] = (uint8_t)(line[1 + i] + paeth(a, b, c));
		}
	}
	free(raw);
	return ok;
}

/* A picture with flat areas, gradients and noise, in `input`'s layout;
 * `seed` changes it everywhere. */
static void paint(uint8_t *pixels, int width, int height, size_t stride,
		  enum screen_png_input input, unsigned seed)
{
	int bytes = input == SCREEN_PNG_RGB24 ? 3 : 4;
	for (int y = 0; y < height; y++)
		for (int x = 0; x < width; x++) {
			uint8_t *p = pixels + (size_t)y * stride + (size_t)x * bytes;
			unsigned noise = (unsigned)(x * 2654435761u ^ y * 40503u ^ seed) >> 13;
			p[0] = (uint8_t)(y < height / 3 ? 200u : (unsigned)x + seed);
			p[1] = (uint8_t)(x % 50 < 25 ? (unsigned)y : noise);
			p[2] = (uint8_t)((x / 7 + y / 5 + seed) & 0xff);
			if (bytes == 4)
				p[3] = (uint8_t)noise; /* unused: must not matter */
		}
}

/* The RGB the writer should have seen. */
static void expected_rgb(const uint8_t *pixels, int width, int height, size_t stride,
			 enum screen_png_input input, uint8_t *rgb)
{
	int bytes = input == SCREEN_PNG_RGB24 ? 3 : 4;
	for (int y = 0; y < height; y++)
		for (int x = 0; x < width; x++) {
			const uint8_t *p = pixels + (size_t)y * stride + (size_t)x * bytes;
			uint8_t *out = rgb + ((size_t)y * width + x) * 3;
			bool bgr = input == SCREEN_PNG_BGR0;
			out[0] = bgr ? p[2] : p[0];
			out[1] = p[1];
			out[2] = bgr ? p[0] : p[2];
		}
}

static void check_round_trip(struct screen_png *png, const uint8_t *pixels, int width, int height,
			     size_t stride, enum screen_png_input input, int want_reused)
{
	uint8_t *data = NULL;
	size_t length = 0;
	char error[128];
	bool made = screen_png_encode(png, pixels, width, height, stride, input, &data, &length,
				      error, sizeof error);
	CHECKF(made, "%dx%d: %s", width, height, error);
	if (!made)
		return;
	uint8_t *want = malloc((size_t)width * height * 3),
		*got = malloc((size_t)width * height * 3);
	expected_rgb(pixels, width, height, stride, input, want);
	CHECKF(decode(data, length, width, height, got), "%dx%d layout %d does not decode", width,
	       height, (int)input);
	CHECKF(memcmp(want, got, (size_t)width * height * 3) == 0, "%dx%d layout %d: other pixels",
	       width, height, (int)input);
	struct screen_png_stats stats;
	screen_png_last_stats(png, &stats);
	if (want_reused >= 0)
		CHECKF(stats.strips_reused == want_reused,
		       "%dx%d: %d of %d strips reused, wanted %d", width, height,
		       stats.strips_reused, stats.strips, want_reused);
	free(want);
	free(got);
	free(data);
}

static void test_sizes_and_layouts(void)
{
	static const int sizes[][2] = {{1, 1},   {2, 3},   {1, 100},   {100, 1},   {37, 31},
				       {37, 32}, {37, 33}, {640, 400}, {1280, 800}};
	for (int layout = 0; layout < 3; layout++)
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			int width = sizes[i][0], height = sizes[i][1];
			size_t stride = (size_t)width * (layout == SCREEN_PNG_RGB24 ? 3 : 4) + 12;
			uint8_t *pixels = calloc(stride, (size_t)height);
			paint(pixels, width, height, stride, (enum screen_png_input)layout, 1);
			struct screen_png *png = screen_png_new();
			check_round_trip(png, pixels, width, height, stride,
					 (enum screen_png_input)layout, 0);
			screen_png_free(png);
			free(pixels);
		}
}

static void test_strips_reused(void)
{
	int width = 300, height = 200; /* 7 strips of 32 rows, the last of 8 */
	size_t stride = (size_t)width * 4;
	uint8_t *pixels = malloc(stride * height);
	paint(pixels, width, height, stride, SCREEN_PNG_BGR0, 7);
	struct screen_png *png = screen_png_new();
	check_round_trip(png, pixels, width, height, stride, SCREEN_PNG_BGR0, 0);
	/* The same picture: every strip reused. */
	check_round_trip(png, pixels, width, height, stride, SCREEN_PNG_BGR0, 7);
	/* A pixel in row 40 (strip 1): strip 1 again, and strip 2 only if its
	 * row above (63) changed, which it did not. */
	pixels[40 * stride + 10 * 4] ^= 0xff;
	check_round_trip(png, pixels, width, height, stride, SCREEN_PNG_BGR0, 6);
	/* Row 63, the last of strip 1: strips 1 and 2 (2 reads it as its row above). */
	pixels[63 * stride + 5 * 4 + 1] ^= 0x55;
	check_round_trip(png, pixels, width, height, stride, SCREEN_PNG_BGR0, 5);
	/* The unused byte is not the picture. */
	pixels[100 * stride + 3] ^= 0xff;
	check_round_trip(png, pixels, width, height, stride, SCREEN_PNG_BGR0, -1);
	/* Everything changes: all strips again, on two threads. */
	paint(pixels, width, height, stride, SCREEN_PNG_BGR0, 99);
	check_round_trip(png, pixels, width, height, stride, SCREEN_PNG_BGR0, 0);
	/* Another size: nothing reused from the old one. */
	check_round_trip(png, pixels, width - 1, height, stride, SCREEN_PNG_BGR0, 0);
	check_round_trip(png, pixels, width - 1, height, stride, SCREEN_PNG_BGR0, 7);
	/* A strip count that does not split evenly, with every second strip stale. */
	for (int y = 0; y < height; y += 64)
		pixels[(size_t)y * stride] ^= 0x0f;
	check_round_trip(png, pixels, width - 1, height, stride, SCREEN_PNG_BGR0, -1);
	screen_png_free(png);
	free(pixels);
}

static void test_empty_refused(void)
{
	struct screen_png *png = screen_png_new();
	uint8_t pixel[4] = {0}, *data = NULL;
	size_t length;
	char error[128] = "";
	CHECK(!screen_png_encode(png, pixel, 0, 1, 4, SCREEN_PNG_BGR0, &data, &length, error,
				 sizeof error));
	CHECK(error[0] != '\0' && data == NULL);
	screen_png_free(png);
}

int main(void)
{
	test_sizes_and_layouts();
	test_strips_reused();
	test_empty_refused();
	return check_done("screen-png");
}
