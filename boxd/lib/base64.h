/* base64.h: RFC 4648 base64 (the standard alphabet, with padding): decoded
 * strictly, so what a caller sends as base64 is refused when it is anything
 * else; encoded for bytes an answer must carry that are not text. */
#ifndef BOXD_BASE64_H
#define BOXD_BASE64_H

#include <stdbool.h>
#include <stddef.h>

/* Decodes `text` (padding with '=' optional, no whitespace) into `out`.
 * False when a character is outside the alphabet, the padding or the
 * length is wrong, the last character carries bits that are not zero, or
 * the bytes would not fit in `out_size`. */
bool base64_decode(const char *text, size_t text_length, unsigned char *out, size_t out_size,
		   size_t *out_length);

/* `data` as base64 with padding, NUL-terminated. Caller frees. */
char *base64_encode(const void *data, size_t length);

#endif
