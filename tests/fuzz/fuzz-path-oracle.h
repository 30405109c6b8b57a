/* fuzz-path-oracle.h: an independent statement of "this relative name
 * cannot leave its base", for harnesses to hold the parsers to. */
#ifndef FUZZ_PATH_ORACLE_H
#define FUZZ_PATH_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Not empty, not absolute, no NUL, and every '/'-separated component is
 * neither empty, "." nor "..". */
static inline bool fuzz_path_is_confined(const char *path, size_t length)
{
	if (length == 0 || path[0] == '/' || memchr(path, '\0', length))
		return false;
	size_t start = 0;
	for (size_t i = 0; i <= length; i++) {
		if (i < length && path[i] != '/')
			continue;
		size_t part = i - start;
		if (part == 0 || (part == 1 && path[start] == '.') ||
		    (part == 2 && path[start] == '.' && path[start + 1] == '.'))
			return false;
		start = i + 1;
	}
	return true;
}

#endif
