#include "random-id.h"

#include <stdint.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"

/* splitmix64: spreads a counter over all 64 bits. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void fallback_bytes(unsigned char *bytes, size_t length)
{
	static uint64_t counter;
	uint64_t state = (uint64_t)clock_monotonic_us() ^ ((uint64_t)getpid() << 40);
	for (size_t i = 0; i < length; i++) {
		if (i % 8 == 0)
			state = mix(state + ++counter);
		bytes[i] = (unsigned char)(state >> (8 * (i % 8)));
	}
}

void random_hex(char *out, size_t bytes)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char buffer[64];
	size_t length = bytes < sizeof buffer ? bytes : sizeof buffer;
	if (getrandom(buffer, length, GRND_NONBLOCK) != (ssize_t)length)
		fallback_bytes(buffer, length);
	for (size_t i = 0; i < length; i++) {
		out[2 * i] = digits[buffer[i] >> 4];
		out[2 * i + 1] = digits[buffer[i] & 15];
	}
	out[2 * length] = '\0';
}
