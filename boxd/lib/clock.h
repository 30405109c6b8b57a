/* clock.h: the two clocks boxd uses. Wall-clock milliseconds since the Unix
 * epoch for every `...At` field, a monotonic clock for every duration (so a
 * clock step never makes a command last -3 s). */
#ifndef BOXD_CLOCK_H
#define BOXD_CLOCK_H

#include <stdint.h>

int64_t clock_now_ms(void);
int64_t clock_monotonic_ms(void);
int64_t clock_monotonic_us(void);

#endif
