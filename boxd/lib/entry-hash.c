/* The low-level SHA1_* calls are deprecated in OpenSSL 3 but still the
 * straight path to the assembly: no provider lookup, no library context, so
 * boxd pays no memory for OpenSSL's initialisation. */
#define OPENSSL_API_COMPAT 0x10100000L
#include "entry-hash.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <openssl/sha.h>

_Static_assert(sizeof(SHA_CTX) <= sizeof(((struct entry_hash *)0)->state),
	       "struct entry_hash too small for SHA_CTX");

static SHA_CTX *context(struct entry_hash *hash)
{
	return (SHA_CTX *)(void *)hash->state;
}

void entry_hash_begin_file(struct entry_hash *hash, mode_t mode)
{
	char prefix[16];
	int length = snprintf(prefix, sizeof prefix, "f:%o:", (unsigned)(mode & 0111));
	SHA1_Init(context(hash));
	SHA1_Update(context(hash), prefix, (size_t)length);
}

void entry_hash_update(struct entry_hash *hash, const void *data, size_t length)
{
	SHA1_Update(context(hash), data, length);
}

void entry_hash_finish(struct entry_hash *hash, unsigned char out[ENTRY_HASH_SIZE])
{
	SHA1_Final(out, context(hash));
}

bool entry_hash_fd(int fd, mode_t mode, void *buffer, size_t buffer_size,
		   unsigned char out[ENTRY_HASH_SIZE])
{
	struct entry_hash hash __attribute__((aligned(16)));
	entry_hash_begin_file(&hash, mode);
	for (;;) {
		ssize_t got = read(fd, buffer, buffer_size);
		if (got == 0)
			break;
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		entry_hash_update(&hash, buffer, (size_t)got);
	}
	entry_hash_finish(&hash, out);
	return true;
}

void entry_hash_symlink(const char *target, size_t length, unsigned char out[ENTRY_HASH_SIZE])
{
	SHA_CTX ctx;
	SHA1_Init(&ctx);
	SHA1_Update(&ctx, "l:", 2);
	SHA1_Update(&ctx, target, length);
	SHA1_Final(out, &ctx);
}
