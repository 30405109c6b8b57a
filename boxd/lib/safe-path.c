#include "safe-path.h"

#include <string.h>

const char *safe_path_check(const char *path, size_t length)
{
	if (length == 0)
		return "is empty";
	if (memchr(path, '\0', length))
		return "contains a NUL byte";
	if (path[0] == '/')
		return "is absolute";
	size_t start = 0;
	while (start <= length) {
		const char *slash = memchr(path + start, '/', length - start);
		size_t end = slash ? (size_t)(slash - path) : length;
		size_t part = end - start;
		if (part == 0)
			return "has an empty component";
		if (part == 1 && path[start] == '.')
			return "contains a \".\" component";
		if (part == 2 && path[start] == '.' && path[start + 1] == '.')
			return "contains \"..\"";
		start = end + 1;
	}
	return NULL;
}

size_t safe_path_trim(char *path, size_t length)
{
	size_t skip = 0;
	for (;;) {
		if (length - skip >= 2 && path[skip] == '.' && path[skip + 1] == '/')
			skip += 2;
		else if (length - skip >= 1 && path[skip] == '/' && skip > 0)
			skip += 1; /* "./" followed by more slashes */
		else
			break;
	}
	if (length - skip == 1 && path[skip] == '.')
		skip = length;
	memmove(path, path + skip, length - skip);
	length -= skip;
	while (length > 1 && path[length - 1] == '/')
		length--;
	path[length] = '\0';
	return length;
}
