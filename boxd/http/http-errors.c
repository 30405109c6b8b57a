#include "http-errors.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

#include "xalloc.h"

static const int statuses[FAILURE_COUNT] = {
	[FAILURE_BAD_REQUEST] = 400,
	[FAILURE_CWD_NOT_FOUND] = 400,
	[FAILURE_FORBIDDEN] = 403,
	[FAILURE_NOT_FOUND] = 404,
	[FAILURE_METHOD_NOT_ALLOWED] = 405,
	[FAILURE_TIMEOUT] = 408,
	[FAILURE_CONFLICT] = 409,
	[FAILURE_FROZEN] = 409,
	[FAILURE_PAYLOAD_TOO_LARGE] = 413,
	[FAILURE_RANGE_NOT_SATISFIABLE] = 416,
	[FAILURE_LOCKED] = 423,
	[FAILURE_HEADER_TOO_LARGE] = 431,
	[FAILURE_INTERNAL] = 500,
	[FAILURE_NOT_IMPLEMENTED] = 501,
	[FAILURE_HTTP_VERSION] = 505,
	[FAILURE_UNAVAILABLE] = 503,
	[FAILURE_DISPLAY_UNAVAILABLE] = 503,
	[FAILURE_DISK_FULL] = 507,
};

int http_status_of(enum failure failure)
{
	return (unsigned)failure < FAILURE_COUNT ? statuses[failure] : 500;
}

enum failure http_failure_of_status(int status)
{
	for (int i = 0; i < FAILURE_COUNT; i++)
		if (statuses[i] == status)
			return (enum failure)i;
	return status >= 500 ? FAILURE_INTERNAL : FAILURE_BAD_REQUEST;
}

char *http_error_json(const char *code, const char *message)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *error = cJSON_AddObjectToObject(root, "error");
	cJSON_AddStringToObject(error, "code", code);
	cJSON_AddStringToObject(error, "message", message);
	char *text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return text ? text
		    : xstrdup("{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}");
}
