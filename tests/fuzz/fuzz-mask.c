/* fuzz-mask.c: libFuzzer harness for the masker.
 * Input: values separated by '\1', then '\0', then the text. The text is
 * masked in chunks sized from the input and at once; both must agree, and
 * no value (without '*'), nor its hex, nor its base64 wrapped by a line end
 * anywhere, may survive in the output. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mask.h"

struct out {
	char *data;
	size_t len;
};

static void collect(void *ctx, const char *data, size_t len)
{
	struct out *o = ctx;
	o->data = realloc(o->data, o->len + len);
	memcpy(o->data + o->len, data, len);
	o->len += len;
}

/* The base64 characters that depend on the value alone, at alignment 0. */
static size_t base64_core(const char *v, size_t len, char *out)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = 0;
	for (size_t bit = 0; bit + 6 <= 8 * len; bit += 6) {
		unsigned sextet = 0;
		for (size_t b = bit; b < bit + 6; b++)
			sextet = (sextet << 1) | (((unsigned char)v[b / 8] >> (7 - b % 8)) & 1);
		out[n++] = alphabet[sextet];
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *input = (const char *)data;
	const char *split = memchr(input, '\0', size);
	if (!split)
		return 0;
	const char *values[64];
	size_t lens[64], count = 0;
	for (const char *v = input; v < split && count < 64;) {
		const char *end = memchr(v, '\1', (size_t)(split - v));
		if (!end)
			end = split;
		values[count] = v;
		lens[count++] = (size_t)(end - v);
		v = end + 1;
	}
	const char *text = split + 1;
	size_t text_len = size - (size_t)(text - input);
	struct mask_set *set = mask_set_new(values, lens, count);

	struct out streamed = {0};
	struct mask_stream *stream = mask_stream_new(set, collect, &streamed);
	size_t chunk = 1 + (size_t)(text_len ? (unsigned char)text[0] % 13 : 0);
	for (size_t at = 0; at < text_len; at += chunk)
		mask_stream_feed(stream, text + at, text_len - at < chunk ? text_len - at : chunk);
	mask_stream_flush(stream);
	mask_stream_free(stream);

	size_t once_len;
	char *once = mask_bytes(set, text, text_len, &once_len);
	if (once_len != streamed.len || (once_len && memcmp(once, streamed.data, once_len) != 0))
		abort();
	for (size_t i = 0; i < count; i++) {
		if (lens[i] < MASK_MIN_FORM || lens[i] > 512)
			continue;
		if (!memchr(values[i], '*', lens[i]) && memmem(once, once_len, values[i], lens[i]))
			abort();
		/* Hex and base64 hold no '*': whatever else was masked around
		 * them, a whole one left in the output was missed. */
		char hex[1024], b64[700], wrapped[704];
		for (size_t k = 0; k < lens[i]; k++) {
			hex[2 * k] = "0123456789abcdef"[(unsigned char)values[i][k] >> 4];
			hex[2 * k + 1] = "0123456789abcdef"[(unsigned char)values[i][k] & 15];
		}
		if (memmem(once, once_len, hex, 2 * lens[i]))
			abort();
		size_t n = base64_core(values[i], lens[i], b64);
		for (size_t cut = 1; cut < n && cut < 8; cut++) {
			memcpy(wrapped, b64, cut);
			wrapped[cut] = '\n';
			memcpy(wrapped + cut + 1, b64 + cut, n - cut);
			if (memmem(once, once_len, wrapped, n + 1))
				abort();
		}
	}
	free(once);
	free(streamed.data);
	mask_set_unref(set);
	return 0;
}
