/* sha1.h: SHA-1 (FIPS 180-4) of a short buffer, for the WebSocket
 * handshake's accept key only.
 *
 * boxd itself never loads libcrypto (api-sync.c: the hashing of files is the
 * archive worker's): mapping it costs every boxd some 1.4 MiB of resident
 * memory for good, for one 60-byte digest per attach. SHA-1 is not used here
 * for security (RFC 6455 uses it as a fixed transform the client checks), and
 * the unit test holds it to FIPS 180's vectors and to libcrypto's results. */
#ifndef BOXD_SHA1_H
#define BOXD_SHA1_H

#include <stddef.h>
#include <stdint.h>

#define SHA1_DIGEST_SIZE 20

void sha1_digest(const void *data, size_t length, uint8_t digest[SHA1_DIGEST_SIZE]);

#endif
