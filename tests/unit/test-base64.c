/* test-base64.c: strict base64 decoding against an independent encoder over
 * every length and random bytes, malformed input refused, and boxd's own
 * encoder giving the independent one's text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "check.h"

static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* RFC 4648's encoding, written plainly (with padding when `pad`). */
static size_t encode(const unsigned char *in, size_t n, char *out, int pad)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = ALPHABET[v >> 18 & 63];
		out[o++] = ALPHABET[v >> 12 & 63];
		if (i + 1 < n)
			out[o++] = ALPHABET[v >> 6 & 63];
		else if (pad)
			out[o++] = '=';
		if (i + 2 < n)
			out[o++] = ALPHABET[v & 63];
		else if (pad)
			out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

static void round_trips(void)
{
	unsigned char in[600], out[600];
	char text[1000];
	srand(7);
	for (size_t n = 0; n <= 520; n++) {
		for (size_t i = 0; i < n; i++)
			in[i] = (unsigned char)rand();
		for (int pad = 0; pad < 2; pad++) {
			size_t length = encode(in, n, text, pad), got = 0;
			CHECKF(base64_decode(text, length, out, sizeof out, &got), "n=%zu pad=%d",
			       n, pad);
			CHECKF(got == n && memcmp(in, out, n) == 0, "n=%zu pad=%d got %zu", n, pad,
			       got);
		}
		char *ours = base64_encode(in, n);
		encode(in, n, text, 1);
		CHECKF(strcmp(ours, text) == 0, "n=%zu: %s", n, ours);
		free(ours);
	}
}

static void refuses(const char *text, size_t room)
{
	unsigned char out[64];
	size_t got = 0;
	CHECKF(!base64_decode(text, strlen(text), out, room, &got), "[%s] was accepted", text);
}

int main(void)
{
	round_trips();
	refuses("QUJD!", 64);   /* outside the alphabet */
	refuses("QUJD\n", 64);  /* whitespace */
	refuses("QUJ-", 64);    /* the URL alphabet */
	refuses("Q", 64);       /* a lone character: no whole byte */
	refuses("QQ=", 64);     /* padding short of a multiple of 4 */
	refuses("QR==", 64);    /* bits past the last byte not zero */
	refuses("Q===", 64);    /* three '=' */
	refuses("QU=JD", 64);   /* '=' inside */
	refuses("QUJDRA==", 3); /* 4 bytes into room for 3 */
	return check_done("base64");
}
