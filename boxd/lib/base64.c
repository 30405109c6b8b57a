/* base64.c: strict RFC 4648 decoding and plain encoding (base64.h). */
#include "base64.h"

#include <stdint.h>

#include "xalloc.h"

/* The value of a base64 character, -1 outside the alphabet. */
static int value_of(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

bool base64_decode(const char *text, size_t length, unsigned char *out, size_t out_size,
		   size_t *out_length)
{
	/* Padding: at most two '=', only at the end, and only to a multiple of 4. */
	size_t padding = 0;
	while (padding < 2 && length > padding && text[length - 1 - padding] == '=')
		padding++;
	if (padding && length % 4)
		return false;
	size_t data = length - padding;
	if (data % 4 == 1)
		return false;
	size_t bytes = data / 4 * 3 + (data % 4 ? data % 4 - 1 : 0);
	if (bytes > out_size)
		return false;
	uint32_t bits = 0;
	int held = 0;
	size_t written = 0;
	for (size_t i = 0; i < data; i++) {
		int value = value_of((unsigned char)text[i]);
		if (value < 0)
			return false;
		bits = bits << 6 | (uint32_t)value;
		held += 6;
		if (held >= 8) {
			held -= 8;
			out[written++] = (unsigned char)(bits >> held);
			bits &= (1u << held) - 1;
		}
	}
	/* What the last character held beyond the bytes must be zero. */
	if (bits)
		return false;
	*out_length = written;
	return true;
}

char *base64_encode(const void *data, size_t length)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *in = data;
	char *out = xmalloc((length + 2) / 3 * 4 + 1), *o = out;
	size_t i = 0;
	for (; i + 3 <= length; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		*o++ = alphabet[v >> 18];
		*o++ = alphabet[(v >> 12) & 63];
		*o++ = alphabet[(v >> 6) & 63];
		*o++ = alphabet[v & 63];
	}
	if (i < length) {
		uint32_t v =
			(uint32_t)in[i] << 16 | (i + 1 < length ? (uint32_t)in[i + 1] << 8 : 0);
		*o++ = alphabet[v >> 18];
		*o++ = alphabet[(v >> 12) & 63];
		*o++ = i + 1 < length ? alphabet[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return out;
}
