/* keyring.h: a blob kept in the kernel keyring, so it outlives the process
 * (even a kill -9) without ever touching a file.
 *
 * The blob is stored as "user" keys in the user keyring, `name:0`,
 * `name:1`, ... of at most KEYRING_CHUNK bytes each (the kernel's limit for
 * a user key is 32767). Readable by the same uid only, found again by the
 * next boxd whatever session keyring it starts with (systemd gives each
 * start a private one). */
#ifndef BOXD_KEYRING_H
#define BOXD_KEYRING_H

#include <stdbool.h>
#include <stddef.h>

#define KEYRING_CHUNK 32000

/* Replaces the blob called `name` (an empty blob removes it). On failure
 * returns false with a sentence in `error`. */
bool keyring_save(const char *name, const char *data, size_t len, char *error, size_t error_size);
/* Reads the blob into `buf` (at most `size` bytes); returns its length, 0
 * when there is none, or -1 when it is larger than `size`. */
long keyring_load(const char *name, char *buf, size_t size);
/* Removes the blob. */
void keyring_clear(const char *name);

#endif
