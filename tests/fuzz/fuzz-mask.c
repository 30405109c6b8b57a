/* fuzz-mask.c: libFuzzer harness for the masker.
 * Input: values separated by '\1', then '\0', then the text. The text is
 * masked in chunks sized from the input and at once; both must agree, and
 * no value (without '*') may survive in the output. */
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

	struct out streamed = { 0 };
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
	for (size_t i = 0; i < count; i++)
		if (lens[i] >= MASK_MIN_FORM && !memchr(values[i], '*', lens[i]) &&
		    memmem(once, once_len, values[i], lens[i]))
			abort();
	free(once);
	free(streamed.data);
	mask_set_unref(set);
	return 0;
}
