/* random-id.h: random names that must not collide (command, upload and
 * recording ids, temporary files); nothing here is a secret. */
#ifndef BOXD_RANDOM_ID_H
#define BOXD_RANDOM_ID_H

#include <stddef.h>

/* Writes 2 * `bytes` lowercase hex digits and a NUL to `out`. When the
 * kernel has no randomness to give yet (early boot), a mix of the clock,
 * the pid and a counter stands in. */
void random_hex(char *out, size_t bytes);

#endif
