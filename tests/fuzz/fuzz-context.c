/* fuzz-context.c: the daemon-wide context (boxd.h) that main.c provides in
 * boxd, for fuzzers that link boxd's modules without running the daemon. */
#include <stddef.h>

#include "boxd.h"

static struct boxd_config config = {.display = ":99", .user = "root", .vsock_port = -1};

struct event_base *boxd_base(void)
{
	return NULL;
}

const struct boxd_config *boxd_config(void)
{
	return &config;
}
