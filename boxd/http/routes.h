/* routes.h: the table of every route boxd serves. Each area's file exports
 * its own `api_<area>_routes[]`; routes.c lists those tables once. */
#ifndef BOXD_ROUTES_H
#define BOXD_ROUTES_H

#include <stdbool.h>

#include "api.h"
#include "route-match.h"

/* Finds the route for `method` and raw `path`, filling `params`. When the
 * path matches but the method does not, returns NULL with *path_known set
 * and the allowed methods written to `allowed` ("GET, POST"). */
const struct api_route *routes_find(const char *method, const char *path,
				    char *params[ROUTE_MAX_PARAMS], bool *path_known,
				    char *allowed, size_t allowed_size);

#endif
