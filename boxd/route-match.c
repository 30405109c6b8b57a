#include "route-match.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

char *route_percent_decode(const char *text, size_t length, size_t *decoded_length)
{
	char *out = xmalloc(length + 1);
	size_t n = 0;
	for (size_t i = 0; i < length; i++) {
		if (text[i] != '%') {
			out[n++] = text[i];
			continue;
		}
		int high = i + 1 < length ? hex_value(text[i + 1]) : -1;
		int low = i + 2 < length ? hex_value(text[i + 2]) : -1;
		if (high < 0 || low < 0) {
			free(out);
			return NULL;
		}
		out[n++] = (char)(high * 16 + low);
		i += 2;
	}
	out[n] = '\0';
	if (decoded_length)
		*decoded_length = n;
	return out;
}

static void free_params(char *params[ROUTE_MAX_PARAMS], int count)
{
	for (int i = 0; i < count; i++) {
		free(params[i]);
		params[i] = NULL;
	}
}

bool route_match(const char *pattern, const char *path, char *params[ROUTE_MAX_PARAMS])
{
	int count = 0;
	for (int i = 0; i < ROUTE_MAX_PARAMS; i++)
		params[i] = NULL;
	while (*pattern && *path) {
		if (pattern[0] == '{' && pattern[1] == '}') {
			size_t length = strcspn(path, "/");
			size_t decoded_length;
			char *segment = length ? route_percent_decode(path, length, &decoded_length) : NULL;
			if (!segment || count == ROUTE_MAX_PARAMS || memchr(segment, '/', decoded_length) ||
			    strlen(segment) != decoded_length) {
				free(segment);
				free_params(params, count);
				return false;
			}
			params[count++] = segment;
			pattern += 2;
			path += length;
			continue;
		}
		if (*pattern != *path)
			break;
		pattern++;
		path++;
	}
	if (*pattern == '\0' && *path == '\0')
		return true;
	free_params(params, count);
	return false;
}
