#include "routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct api_route *const *route_tables;

void routes_set(const struct api_route *const *tables)
{
	route_tables = tables;
}

static void note_allowed(char *allowed, size_t size, const char *method)
{
	size_t used = strlen(allowed);
	if (strstr(allowed, method))
		return;
	snprintf(allowed + used, size - used, "%s%s", used ? ", " : "", method);
}

const struct api_route *routes_find(const char *method, const char *path,
				    char *params[ROUTE_MAX_PARAMS], bool *path_known, char *allowed,
				    size_t allowed_size)
{
	*path_known = false;
	allowed[0] = '\0';
	for (const struct api_route *const *table = route_tables; table && *table; table++) {
		for (const struct api_route *route = *table; route->pattern; route++) {
			if (!route_match(route->pattern, path, params))
				continue;
			if (strcmp(route->method, method) == 0)
				return route;
			*path_known = true;
			note_allowed(allowed, allowed_size, route->method);
			for (int i = 0; i < ROUTE_MAX_PARAMS; i++) {
				free(params[i]);
				params[i] = NULL;
			}
		}
	}
	return NULL;
}
