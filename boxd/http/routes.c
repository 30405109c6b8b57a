#include "routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One line per area; each table ends with an all-zero entry. */
extern const struct api_route api_health_routes[];
extern const struct api_route api_steps_routes[];
extern const struct api_route api_lock_routes[];
extern const struct api_route api_exec_routes[];
extern const struct api_route api_procs_routes[];
extern const struct api_route api_screen_routes[];
extern const struct api_route api_secrets_routes[];
extern const struct api_route api_sync_routes[];
extern const struct api_route api_uploads_routes[];
extern const struct api_route api_files_routes[];
extern const struct api_route api_init_routes[];

static const struct api_route *const route_tables[] = {
	api_health_routes,
	api_steps_routes,
	api_lock_routes,
	api_exec_routes,
	api_procs_routes,
	api_screen_routes,
	api_secrets_routes,
	api_sync_routes,
	api_uploads_routes,
	api_files_routes,
	api_init_routes,
	NULL,
};

static void note_allowed(char *allowed, size_t size, const char *method)
{
	size_t used = strlen(allowed);
	if (strstr(allowed, method))
		return;
	snprintf(allowed + used, size - used, "%s%s", used ? ", " : "", method);
}

const struct api_route *routes_find(const char *method, const char *path,
				    char *params[ROUTE_MAX_PARAMS], bool *path_known,
				    char *allowed, size_t allowed_size)
{
	*path_known = false;
	allowed[0] = '\0';
	for (const struct api_route *const *table = route_tables; *table; table++) {
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
