/* manifest.h: the sync manifest (API.md, "Sync and files").
 *
 * One line per entry: "<40 hex sha1> <hex of the path's bytes>\n", the path
 * relative to the destination. Paths are bytes, not necessarily UTF-8, which
 * is why they travel as hex. */
#ifndef BOXD_MANIFEST_H
#define BOXD_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

#define MANIFEST_SHA1_SIZE 20

/* Parses one line (without its newline; a trailing '\r' is tolerated).
 * Writes the digest and the decoded path into `path`, which must hold
 * (length / 2 + 1) bytes; the path is NUL-terminated and checked with
 * safe_path_check(). Returns NULL, or a sentence saying what is wrong. */
const char *manifest_parse_line(const char *line, size_t length,
				unsigned char sha1[MANIFEST_SHA1_SIZE], char *path,
				size_t *path_length);

/* Lower-case hex of `length` bytes into `out` (2 * length + 1 bytes). */
void manifest_hex_encode(const void *data, size_t length, char *out);
/* Decodes 2 * length hex digits into `out`; false on a non-hex digit. */
bool manifest_hex_decode(const char *hex, size_t length, unsigned char *out);

#endif
