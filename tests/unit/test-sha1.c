/* test-sha1.c: boxd's SHA-1 (the WebSocket handshake's) against FIPS 180's
 * examples and against libcrypto on every length up to three blocks and
 * past, where the padding's cases change. */
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sha1.h"

static void hex(const uint8_t digest[SHA1_DIGEST_SIZE], char out[41])
{
	for (int i = 0; i < SHA1_DIGEST_SIZE; i++)
		snprintf(out + 2 * i, 3, "%02x", digest[i]);
}

static void known(const char *text, size_t repeat, const char *expected)
{
	size_t length = strlen(text) * repeat;
	char *data = malloc(length + 1);
	for (size_t i = 0; i < repeat; i++)
		memcpy(data + i * strlen(text), text, strlen(text));
	uint8_t digest[SHA1_DIGEST_SIZE];
	char got[41];
	sha1_digest(data, length, digest);
	hex(digest, got);
	CHECKF(!strcmp(got, expected), "sha1 of %zu bytes: %s, not %s", length, got, expected);
	free(data);
}

static void against_libcrypto(void)
{
	unsigned char data[300];
	srand(7);
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)rand();
	for (size_t length = 0; length <= sizeof data; length++) {
		uint8_t ours[SHA1_DIGEST_SIZE];
		unsigned char theirs[SHA_DIGEST_LENGTH];
		sha1_digest(data, length, ours);
		SHA1(data, length, theirs);
		CHECKF(!memcmp(ours, theirs, sizeof ours), "length %zu differs from libcrypto",
		       length);
	}
}

int main(void)
{
	known("", 1, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
	known("abc", 1, "a9993e364706816aba3e25717850c26c9cd0d89d");
	known("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
	      "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
	known("a", 1000000, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
	against_libcrypto();
	return check_done("sha1");
}
