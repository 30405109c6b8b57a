/* routes.h: finding the route of a request among the tables given to the
 * router (router_setup; boxd's are listed in api/api.c). */
#ifndef BOXD_ROUTES_H
#define BOXD_ROUTES_H

#include <stdbool.h>

#include "router.h"
#include "route-match.h"

/* The tables to search from now on (kept, not copied). */
void routes_set(const struct api_route *const *tables);
/* Finds the route for `method` and raw `path`, filling `params`. When the
 * path matches but the method does not, returns NULL with *path_known set
 * and the allowed methods written to `allowed` ("GET, POST"). */
const struct api_route *routes_find(const char *method, const char *path,
				    char *params[ROUTE_MAX_PARAMS], bool *path_known,
				    char *allowed, size_t allowed_size);

#endif
