/* fuzz-manifest.c: libFuzzer harness for the sync manifest parser and the
 * path rule: any line parses or fails with a reason, and a parsed path never
 * leaves its base (not absolute, no "."/".." or empty component, no NUL). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/manifest.h"
#include "lib/safe-path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *path = malloc(size / 2 + 1);
	unsigned char sha1[MANIFEST_SHA1_SIZE];
	size_t length = 0;
	const char *error = manifest_parse_line((const char *)data, size, sha1, path, &length);
	if (!error) {
		if (length == 0 || path[0] == '/' || memchr(path, '\0', length) ||
		    strstr(path, "//") || safe_path_check(path, length))
			abort();
		for (const char *part = path; part; part = strchr(part, '/')) {
			part += *part == '/';
			if (strncmp(part, "..", 2) == 0 && (part[2] == '/' || !part[2]))
				abort();
		}
	}
	free(path);
	char *copy = malloc(size + 1);
	memcpy(copy, data, size);
	copy[size] = '\0';
	size_t trimmed = safe_path_trim(copy, strnlen(copy, size));
	if (trimmed > size || copy[trimmed] != '\0')
		abort();
	free(copy);
	return 0;
}
