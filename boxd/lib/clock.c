#include "clock.h"

#include <time.h>

static int64_t read_us(clockid_t id)
{
	struct timespec now;
	clock_gettime(id, &now);
	return (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

int64_t clock_now_ms(void)
{
	return read_us(CLOCK_REALTIME) / 1000;
}

int64_t clock_monotonic_ms(void)
{
	return read_us(CLOCK_MONOTONIC) / 1000;
}

int64_t clock_monotonic_us(void)
{
	return read_us(CLOCK_MONOTONIC);
}
