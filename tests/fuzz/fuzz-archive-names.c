/* fuzz-archive-names: tar entry names and hard link targets as the archive
 * worker cleans and checks them (safe_path_trim, then safe_path_check).
 * Aborts when a name passes the check yet could leave the destination. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-path-oracle.h"
#include "safe-path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *name = malloc(size + 1);
	memcpy(name, data, size);
	name[size] = '\0';
	size_t length = safe_path_trim(name, size);
	if (length > size)
		abort();
	const char *unsafe = safe_path_check(name, length);
	if (!unsafe && !fuzz_path_is_confined(name, length)) {
		fprintf(stderr, "safe_path_check accepted a name that leaves its base: %.*s\n",
			(int)length, name);
		abort();
	}
	free(name);
	return 0;
}
