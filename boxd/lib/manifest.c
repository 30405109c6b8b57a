#include "text.h"
#include "manifest.h"

#include <stdio.h>
#include <string.h>

#include "safe-path.h"

bool manifest_hex_decode(const char *hex, size_t length, unsigned char *out)
{
	for (size_t i = 0; i < length; i++) {
		int high = text_hex_value(hex[2 * i]), low = text_hex_value(hex[2 * i + 1]);
		if (high < 0 || low < 0)
			return false;
		out[i] = (unsigned char)(high << 4 | low);
	}
	return true;
}

void manifest_hex_encode(const void *data, size_t length, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *bytes = data;
	for (size_t i = 0; i < length; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 15];
	}
	out[2 * length] = '\0';
}

const char *manifest_parse_line(const char *line, size_t length,
				unsigned char sha1[MANIFEST_SHA1_SIZE], char *path,
				size_t *path_length)
{
	if (length > 0 && line[length - 1] == '\r')
		length--;
	if (length < 2 * MANIFEST_SHA1_SIZE + 2 || line[2 * MANIFEST_SHA1_SIZE] != ' ')
		return "is not \"<40 hex sha1> <hex path>\"";
	if (!manifest_hex_decode(line, MANIFEST_SHA1_SIZE, sha1))
		return "has a sha1 that is not 40 hex digits";
	const char *hex = line + 2 * MANIFEST_SHA1_SIZE + 1;
	size_t hex_length = length - 2 * MANIFEST_SHA1_SIZE - 1;
	if (hex_length % 2 != 0)
		return "has a path whose hex has an odd number of digits";
	if (!manifest_hex_decode(hex, hex_length / 2, (unsigned char *)path))
		return "has a path that is not hex";
	*path_length = hex_length / 2;
	path[*path_length] = '\0';
	const char *unsafe = safe_path_check(path, *path_length);
	if (unsafe) {
		static __thread char reason[96];
		snprintf(reason, sizeof reason, "has a path that leaves dest (it %s)", unsafe);
		return reason;
	}
	return NULL;
}
