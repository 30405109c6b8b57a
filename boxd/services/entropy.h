/* entropy.h: an init's `entropy`, bytes the host drew, given to the kernel
 * (API.md, "Init"). Two boxes restored from one snapshot hold the same
 * random generator state; a kernel with a VM generation ID device learns of
 * the restore and reseeds, the cloud kernel does not. The host's bytes,
 * credited and followed by a reseed, make every later read from
 * /dev/urandom or getrandom() differ between the two from the init on. */
#ifndef BOXD_ENTROPY_H
#define BOXD_ENTROPY_H

#include <stdbool.h>
#include <stddef.h>

#define ENTROPY_MIN_BYTES 32
#define ENTROPY_MAX_BYTES 512

/* Checks the field's text: base64 of ENTROPY_MIN_BYTES to ENTROPY_MAX_BYTES.
 * False with a sentence in `error`. */
bool entropy_check(const char *base64, char *error, size_t error_size);

/* Gives the decoded bytes to the kernel. Returns "reseeded" (credited to
 * the pool and the generator reseeded: the contract's case), "mixed" (boxd
 * lacks CAP_SYS_ADMIN, as in a development run: the bytes were written to
 * /dev/urandom, which mixes them in uncredited, and the generator takes them
 * at its next reseed, up to a minute later), or NULL with a sentence in
 * `error`. Checks first (entropy_check). */
const char *entropy_give(const char *base64, char *error, size_t error_size);

#endif
