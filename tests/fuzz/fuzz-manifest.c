/* fuzz-manifest: sync manifests (POST /v1/sync/diff bodies), line by line as
 * manifest_parse_line reads them. Aborts when an accepted line's path could
 * leave the destination or overflows the buffer the caller sized. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-path-oracle.h"
#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *at = (const char *)data, *end = at + size;
	while (at < end) {
		const char *newline = memchr(at, '\n', (size_t)(end - at));
		size_t length = (size_t)((newline ? newline : end) - at);
		/* The line on the heap, exactly its size: ASan sees any overread. */
		char *line = malloc(length ? length : 1);
		memcpy(line, at, length);
		unsigned char sha1[MANIFEST_SHA1_SIZE];
		char *path = malloc(length / 2 + 1);
		size_t path_length = 0;
		if (!manifest_parse_line(line, length, sha1, path, &path_length)) {
			if (path_length > length / 2 || path[path_length] != '\0' ||
			    !fuzz_path_is_confined(path, path_length)) {
				fprintf(stderr, "manifest_parse_line accepted an unsafe path\n");
				abort();
			}
		}
		free(path);
		free(line);
		at += length + 1;
	}
	return 0;
}
