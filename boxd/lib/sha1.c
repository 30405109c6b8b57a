/* sha1.c: SHA-1 of a buffer in one call (sha1.h says why boxd has its own). */
#include "sha1.h"

#include <string.h>

static uint32_t rotate_left(uint32_t value, unsigned bits)
{
	return (value << bits) | (value >> (32 - bits));
}

static void compress(uint32_t state[5], const uint8_t block[64])
{
	uint32_t w[80];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 |
		       (uint32_t)block[4 * i + 2] << 8 | block[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rotate_left(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4];
	for (int i = 0; i < 80; i++) {
		uint32_t f, k;
		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5A827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ED9EBA1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8F1BBCDC;
		} else {
			f = b ^ c ^ d;
			k = 0xCA62C1D6;
		}
		uint32_t t = rotate_left(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rotate_left(b, 30);
		b = a;
		a = t;
	}
	state[0] += a;
	state[1] += b;
	state[2] += c;
	state[3] += d;
	state[4] += e;
}

void sha1_digest(const void *data, size_t length, uint8_t digest[SHA1_DIGEST_SIZE])
{
	uint32_t state[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
	const uint8_t *bytes = data;
	size_t whole = length - length % 64;
	for (size_t at = 0; at < whole; at += 64)
		compress(state, bytes + at);
	/* The rest, 0x80, zeros, and the length in bits (big-endian): one or
	 * two blocks. */
	uint8_t last[128] = {0};
	size_t rest = length - whole;
	memcpy(last, bytes + whole, rest);
	last[rest] = 0x80;
	size_t blocks = rest < 56 ? 1 : 2;
	uint64_t bits = (uint64_t)length * 8;
	for (int i = 0; i < 8; i++)
		last[blocks * 64 - 1 - i] = (uint8_t)(bits >> (8 * i));
	for (size_t i = 0; i < blocks; i++)
		compress(state, last + 64 * i);
	for (int i = 0; i < 5; i++)
		for (int j = 0; j < 4; j++)
			digest[4 * i + j] = (uint8_t)(state[i] >> (24 - 8 * j));
}
