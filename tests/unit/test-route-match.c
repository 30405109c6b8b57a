#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "route-match.h"

static void free_all(char *params[ROUTE_MAX_PARAMS])
{
	for (int i = 0; i < ROUTE_MAX_PARAMS; i++)
		free(params[i]);
}

int main(void)
{
	char *p[ROUTE_MAX_PARAMS];
	CHECK(route_match("/v1/health", "/v1/health", p));
	CHECK(!route_match("/v1/health", "/v1/health/", p));
	CHECK(!route_match("/v1/health", "/v1/healt", p));
	CHECK(!route_match("/v1/health", "/v1", p));
	CHECK(route_match("/v1/health", "/v1/heal%74h", p));

	CHECK(route_match("/v1/procs/{}/wait", "/v1/procs/b_12/wait", p));
	CHECK(p[0] && strcmp(p[0], "b_12") == 0 && !p[1]);
	free_all(p);
	CHECK(route_match("/v1/procs/{}", "/v1/procs/a%20b", p));
	CHECK(p[0] && strcmp(p[0], "a b") == 0);
	free_all(p);
	CHECK(!route_match("/v1/procs/{}", "/v1/procs/", p));
	CHECK(!route_match("/v1/procs/{}", "/v1/procs/a%2Fb", p)); /* a decoded slash */
	CHECK(!route_match("/v1/procs/{}", "/v1/procs/a%00b", p)); /* a NUL */
	CHECK(!route_match("/v1/procs/{}", "/v1/procs/a%zz", p));  /* a bad escape */
	CHECK(!route_match("/v1/procs/{}/wait", "/v1/procs/x/stop", p));
	CHECK(route_match("/v1/{}/{}", "/v1/a/b", p));
	CHECK(p[0] && p[1] && strcmp(p[1], "b") == 0);
	free_all(p);
	CHECK(!route_match("/v1/health", "v1/health", p));

	size_t length;
	char *decoded = route_percent_decode("a%41%62+", 8, &length);
	CHECK(decoded && strcmp(decoded, "aAb+") == 0 && length == 4);
	free(decoded);
	CHECK(route_percent_decode("%4", 2, &length) == NULL);
	CHECK(route_percent_decode("%", 1, &length) == NULL);
	return check_done("route-match");
}
