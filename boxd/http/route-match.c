#include "text.h"
#include "route-match.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

char *route_percent_decode(const char *text, size_t length, size_t *decoded_length)
{
	char *out = xmalloc(length + 1);
	size_t n = 0;
	for (size_t i = 0; i < length; i++) {
		if (text[i] != '%') {
			out[n++] = text[i];
			continue;
		}
		int high = i + 1 < length ? text_hex_value(text[i + 1]) : -1;
		int low = i + 2 < length ? text_hex_value(text[i + 2]) : -1;
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

/* Compares pattern and path segment by segment; literal segments compare
 * against the decoded path segment, so "/v1/heal%74h" is "/v1/health". */
bool route_match(const char *pattern, const char *path, char *params[ROUTE_MAX_PARAMS])
{
	int count = 0;
	for (int i = 0; i < ROUTE_MAX_PARAMS; i++)
		params[i] = NULL;
	for (;;) {
		if (*pattern != '/' || *path != '/')
			break;
		pattern++;
		path++;
		size_t pattern_length = strcspn(pattern, "/");
		size_t path_length = strcspn(path, "/");
		size_t decoded_length;
		char *segment = route_percent_decode(path, path_length, &decoded_length);
		bool is_param = pattern_length == 2 && memcmp(pattern, "{}", 2) == 0;
		bool ok = segment && strlen(segment) == decoded_length &&
			  !memchr(segment, '/', decoded_length);
		if (ok && is_param)
			ok = decoded_length > 0 && count < ROUTE_MAX_PARAMS;
		else if (ok)
			ok = decoded_length == pattern_length &&
			     memcmp(segment, pattern, pattern_length) == 0;
		if (!ok) {
			free(segment);
			break;
		}
		if (is_param)
			params[count++] = segment;
		else
			free(segment);
		pattern += pattern_length;
		path += path_length;
		if (*pattern == '\0' && *path == '\0')
			return true;
	}
	free_params(params, count);
	return false;
}
