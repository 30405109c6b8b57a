/* fuzz-request: what boxd parses of an HTTP request before and for a
 * handler: the request target (libevent's URI parser, then boxd's
 * percent-decoding and route matching over every registered route), the
 * query string (as api_query reads it), the X-Request-Id check and the JSON
 * body (as api_body_json parses it).
 * Input: "METHOD TARGET\nX-Request-Id-value\nBODY..." (missing parts empty). */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "http/request-ids.h"
#include "http/routes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *take_line(const char **at, const char *end)
{
	const char *newline = memchr(*at, '\n', (size_t)(end - *at));
	const char *stop = newline ? newline : end;
	size_t length = (size_t)(stop - *at);
	char *line = malloc(length + 1);
	memcpy(line, *at, length);
	line[length] = '\0';
	*at = newline ? newline + 1 : end;
	return line;
}

static void fuzz_target(const char *method, const char *target)
{
	struct evhttp_uri *uri = evhttp_uri_parse_with_flags(target, EVHTTP_URI_NONCONFORMANT);
	if (!uri)
		return;
	const char *path = evhttp_uri_get_path(uri);
	if (path && path[0] == '/') {
		size_t decoded_length;
		free(route_percent_decode(path, strlen(path), &decoded_length));
		char *params[ROUTE_MAX_PARAMS] = {0};
		bool known;
		char allowed[64];
		if (routes_find(method, path, params, &known, allowed, sizeof allowed)) {
			for (int i = 0; i < ROUTE_MAX_PARAMS; i++)
				free(params[i]);
		}
	}
	const char *query = evhttp_uri_get_query(uri);
	if (query) {
		struct evkeyvalq pairs = {0};
		pairs.tqh_last = &pairs.tqh_first;
		if (evhttp_parse_query_str(query, &pairs) == 0) {
			static const char *const names[] = {"dest", "limit", "path", "tail", "offset", "format", "scale"};
			for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
				(void)evhttp_find_header(&pairs, names[i]);
		}
		evhttp_clear_headers(&pairs);
	}
	evhttp_uri_free(uri);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *at = (const char *)data, *end = at + size;
	char *request_line = take_line(&at, end);
	char *request_id = take_line(&at, end);
	char *space = strchr(request_line, ' ');
	if (space) {
		*space = '\0';
		fuzz_target(request_line, space + 1);
	}
	(void)request_ids_valid(request_id);
	const char *json_end = NULL;
	cJSON *json = cJSON_ParseWithLengthOpts(at, (size_t)(end - at), &json_end, false);
	cJSON_Delete(json);
	free(request_line);
	free(request_id);
	return 0;
}
