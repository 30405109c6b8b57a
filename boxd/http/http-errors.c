#include "http-errors.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

#include "xalloc.h"

const char *http_error_code(int status)
{
	switch (status) {
	case 400: return "bad_request";
	case 404: return "not_found";
	case 405: return "method_not_allowed";
	case 408: return "timeout";
	case 413: return "payload_too_large";
	case 431: return "header_too_large";
	case 501: return "not_implemented";
	case 503: return "unavailable";
	case 505: return "bad_request";
	case 507: return "disk_full";
	default: return status >= 500 ? "internal" : "bad_request";
	}
}

char *http_error_json(const char *code, const char *message)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *error = cJSON_AddObjectToObject(root, "error");
	cJSON_AddStringToObject(error, "code", code);
	cJSON_AddStringToObject(error, "message", message);
	char *text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return text ? text : xstrdup("{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}");
}
