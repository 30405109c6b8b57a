/* entry-hash.h: the sync entry hash (API.md, "Sync and files"), bit for bit
 * what the client computes:
 *   regular file:  sha1("f:" + octal(mode & 0111) + ":" + contents)
 *   symbolic link: sha1("l:" + target bytes)
 * where the octal has no leading zeros (0755 -> "111", 0644 -> "0").
 * Thread-safe; uses libcrypto's SHA-1 without any library-wide state. */
#ifndef BOXD_ENTRY_HASH_H
#define BOXD_ENTRY_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define ENTRY_HASH_SIZE 20

/* Incremental form, for data that streams past (the extractor). */
struct entry_hash {
	_Alignas(16) unsigned char state[128]; /* a SHA_CTX, opaque to callers */
};
void entry_hash_begin_file(struct entry_hash *hash, mode_t mode);
void entry_hash_update(struct entry_hash *hash, const void *data, size_t length);
void entry_hash_finish(struct entry_hash *hash, unsigned char out[ENTRY_HASH_SIZE]);

/* Hashes the regular file open on `fd` from its current offset to its end,
 * reading through `buffer`. False (errno set) when a read fails. */
bool entry_hash_fd(int fd, mode_t mode, void *buffer, size_t buffer_size,
		   unsigned char out[ENTRY_HASH_SIZE]);
void entry_hash_symlink(const char *target, size_t length, unsigned char out[ENTRY_HASH_SIZE]);

#endif
