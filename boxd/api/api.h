/* api.h: the API areas' face towards main.c: every area's route table, for
 * the router, and boxd's settings, which the handlers read.
 *
 * Each area is one file (api-health.c, api-exec.c, ...) exporting a table of
 * `struct api_route` (http/router.h) that parses a request, calls a service
 * and answers; api.c lists the tables once. */
#ifndef BOXD_API_API_H
#define BOXD_API_API_H

#include "config.h"
#include "router.h"

/* Every area's table, the list ending with NULL: for router_setup(). */
extern const struct api_route *const api_route_tables[];

/* `config` is kept (not copied) for api_config(). */
void api_init(const struct boxd_config *config);
/* boxd's settings, as given to api_init(). */
const struct boxd_config *api_config(void);

#endif
