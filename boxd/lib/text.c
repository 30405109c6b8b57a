#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool text_fail(char *error, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(error, size, fmt, ap);
	va_end(ap);
	return false;
}

int text_hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool text_json_has_nul(const char *json, size_t length)
{
	bool in_string = false;
	for (size_t i = 0; i < length; i++) {
		if (json[i] == '"') {
			in_string = !in_string;
		} else if (in_string && json[i] == '\\' && i + 1 < length) {
			if (json[i + 1] == 'u' && i + 5 < length &&
			    memcmp(json + i + 2, "0000", 4) == 0)
				return true;
			i++; /* the escaped character, so \\ and \" do not confuse the scan */
		}
	}
	return false;
}

bool text_is_env_name(const char *name)
{
	if (!*name || (*name >= '0' && *name <= '9'))
		return false;
	for (const char *p = name; *p; p++)
		if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9')))
			return false;
	return true;
}
