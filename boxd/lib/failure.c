/* failure.c: the contract's error codes of enum failure, both ways, and the
 * failure of a write of the caller's bytes. */
#include "failure.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const codes[FAILURE_COUNT] = {
	[FAILURE_BAD_REQUEST] = "bad_request",
	[FAILURE_CWD_NOT_FOUND] = "cwd_not_found",
	[FAILURE_FORBIDDEN] = "forbidden",
	[FAILURE_NOT_FOUND] = "not_found",
	[FAILURE_METHOD_NOT_ALLOWED] = "method_not_allowed",
	[FAILURE_TIMEOUT] = "timeout",
	[FAILURE_CONFLICT] = "conflict",
	[FAILURE_FROZEN] = "frozen",
	[FAILURE_PAYLOAD_TOO_LARGE] = "payload_too_large",
	[FAILURE_RANGE_NOT_SATISFIABLE] = "range_not_satisfiable",
	[FAILURE_LOCKED] = "locked",
	[FAILURE_HEADER_TOO_LARGE] = "header_too_large",
	[FAILURE_INTERNAL] = "internal",
	[FAILURE_NOT_IMPLEMENTED] = "not_implemented",
	[FAILURE_HTTP_VERSION] = "bad_request",
	[FAILURE_UNAVAILABLE] = "unavailable",
	[FAILURE_DISPLAY_UNAVAILABLE] = "display_unavailable",
	[FAILURE_DISK_FULL] = "disk_full",
};

const char *failure_code(enum failure failure)
{
	return (unsigned)failure < FAILURE_COUNT ? codes[failure] : codes[FAILURE_INTERNAL];
}

enum failure failure_from_code(const char *code)
{
	for (int i = 0; code && i < FAILURE_COUNT; i++)
		if (!strcmp(code, codes[i]))
			return (enum failure)i;
	return FAILURE_INTERNAL;
}

bool failure_disk_full(int error)
{
	return error == ENOSPC || error == EDQUOT;
}

enum failure failure_of_write(int error, const char *what, char *message, size_t message_size)
{
	if (failure_disk_full(error)) {
		snprintf(message, message_size, "%s: %s (free space there and retry)", what,
			 strerror(error));
		return FAILURE_DISK_FULL;
	}
	snprintf(message, message_size, "%s: %s", what, strerror(error));
	return FAILURE_INTERNAL;
}
