/* routes.h: what a route is (a table entry of an API area, api/api-*.c),
 * and finding the route of a request among the tables given to the router
 * (router_setup; boxd's are listed in api/api.c). */
#ifndef BOXD_ROUTES_H
#define BOXD_ROUTES_H

#include <stdbool.h>
#include <stddef.h>

#include "route-match.h"

struct api_request;

enum api_route_flags {
	/* Refused with 423 `locked` while a person has the screen. */
	API_REFUSED_WHILE_LOCKED = 1u << 0,
	/* X-Request-Id makes a repeat attach to, or replay, the first answer. */
	API_IDEMPOTENT = 1u << 1,
	/* Not a "call" for activity.lastCallAt (health, for instance). */
	API_NOT_ACTIVITY = 1u << 2,
	/* The body is not read before the handler runs: the handler streams
	 * it where it goes with api_body_to_fd(), at the pace that takes it.
	 * No size limit (max_body is ignored). */
	API_STREAM_BODY = 1u << 3,
	/* Acts for the control plane or the person at the screen (init, lock,
	 * secrets, service settings): 403 `forbidden` to boxd's own commands,
	 * told by where the calling process lives (callers.h), on every
	 * listener. */
	API_FOR_CONTROL = 1u << 4,
	/* Counts as an upload while it runs (activity: its body is coming in,
	 * or being extracted). */
	API_UPLOAD = 1u << 5,
	/* Its streamed answer is the live view (activity: `liveView`, not
	 * `stream`). */
	API_LIVE = 1u << 6,
	/* Answered while the box is frozen (health, init, thaw); every other
	 * route then answers 409 `frozen`. */
	API_SERVED_FROZEN = 1u << 7,
};

/* Default request body limit when a route gives none. */
#define API_DEFAULT_MAX_BODY (1u << 20)

struct api_route {
	const char *method;  /* "GET", "POST", "PUT", "DELETE", "HEAD" */
	const char *pattern; /* "/v1/procs/{}/wait": {} is one path segment */
	unsigned flags;      /* enum api_route_flags */
	size_t max_body;     /* bytes; 0 means API_DEFAULT_MAX_BODY; past it: 413 */
	void (*handle)(struct api_request *req);
};

/* The tables to search from now on (kept, not copied). */
void routes_set(const struct api_route *const *tables);
/* Finds the route for `method` and raw `path`, filling `params`. When the
 * path matches but the method does not, returns NULL with *path_known set
 * and the allowed methods written to `allowed` ("GET, POST"). */
const struct api_route *routes_find(const char *method, const char *path,
				    char *params[ROUTE_MAX_PARAMS], bool *path_known, char *allowed,
				    size_t allowed_size);

#endif
