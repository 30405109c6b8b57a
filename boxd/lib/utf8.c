#include "utf8.h"

#include <stdint.h>
#include <string.h>

#include "xalloc.h"

/* Length of the valid UTF-8 sequence at `s` (RFC 3629: no overlongs, no
 * surrogates, at most U+10FFFF), or 0 when the bytes there are invalid or
 * the sequence is incomplete. */
static size_t sequence_length(const unsigned char *s, size_t left)
{
	unsigned char c = s[0];
	if (c >= 0x01 && c < 0x80)
		return 1;
	size_t need;
	unsigned char low = 0x80, high = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		need = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		if (c == 0xe0)
			low = 0xa0;
		if (c == 0xed)
			high = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		if (c == 0xf0)
			low = 0x90;
		if (c == 0xf4)
			high = 0x8f;
	} else
		return 0;
	if (left < need)
		return 0;
	if (s[1] < low || s[1] > high)
		return 0;
	for (size_t i = 2; i < need; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return need;
}

char *utf8_sanitize(const char *data, size_t length, size_t *out_length)
{
	/* Worst case every byte becomes the 3-byte replacement character. */
	char *out = xmalloc(length * 3 + 1);
	const unsigned char *s = (const unsigned char *)data;
	size_t i = 0, o = 0;
	while (i < length) {
		size_t n = sequence_length(s + i, length - i);
		if (n == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, s + i, n);
		o += n;
		i += n;
	}
	out[o] = '\0';
	if (out_length)
		*out_length = o;
	return out;
}

bool utf8_valid(const char *data, size_t length)
{
	const unsigned char *s = (const unsigned char *)data;
	size_t i = 0;
	while (i < length) {
		size_t n = s[i] == 0 ? 1 : sequence_length(s + i, length - i);
		if (n == 0)
			return false;
		i += n;
	}
	return true;
}

size_t utf8_prefix_length(const char *data, size_t length)
{
	const unsigned char *s = (const unsigned char *)data;
	/* Look back over at most 3 bytes for the lead byte of a last character. */
	for (size_t back = 1; back <= 4 && back <= length; back++) {
		unsigned char c = s[length - back];
		if ((c & 0xc0) == 0x80)
			continue; /* continuation byte: keep looking for its lead */
		size_t want = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		return want > back ? length - back : length;
	}
	return length;
}

size_t utf8_skip_partial(const char *data, size_t length)
{
	size_t i = 0;
	while (i < length && i < 3 && ((unsigned char)data[i] & 0xc0) == 0x80)
		i++;
	return i;
}

size_t utf8_valid_prefix(const char *data, size_t length)
{
	const unsigned char *s = (const unsigned char *)data;
	size_t i = 0;
	while (i < length) {
		/* ASCII runs are most output: 8 bytes at a time when none has its
		 * high bit set and none is NUL (the classic has-zero-byte test). */
		uint64_t word;
		if (length - i >= 8) {
			memcpy(&word, s + i, 8);
			if (!(word & 0x8080808080808080ull) &&
			    !((word - 0x0101010101010101ull) & ~word & 0x8080808080808080ull)) {
				i += 8;
				continue;
			}
		}
		if (s[i] >= 0x01 && s[i] < 0x80) {
			i++;
			continue;
		}
		size_t n = sequence_length(s + i, length - i);
		if (n == 0)
			return i;
		i += n;
	}
	return i;
}
