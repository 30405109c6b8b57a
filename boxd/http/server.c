#include "server.h"

#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api-internal.h"
#include "listeners.h"
#include "log.h"
#include "text.h"
#include "xalloc.h"

static struct evhttp *http;
static int unix_fd = -1, vsock_fd = -1;
static char *socket_path;

static void serve_vsock(const struct boxd_config *config)
{
	if (config->vsock_port < 0)
		return;
	char reason[256];
	vsock_fd = listeners_open_vsock((unsigned)config->vsock_port, reason, sizeof reason);
	if (vsock_fd < 0) {
		log_msg(LOG_LEVEL_WARNING, "%s", reason);
		return;
	}
	listeners_guard_vsock(vsock_fd, config->allowed_cids, config->allowed_cid_count);
	if (!evhttp_accept_socket_with_handle(http, vsock_fd)) {
		log_msg(LOG_LEVEL_WARNING, "cannot serve vsock port %d; serving on the unix socket only",
			config->vsock_port);
		listeners_unguard(vsock_fd);
		close(vsock_fd);
		vsock_fd = -1;
		return;
	}
	log_msg(LOG_LEVEL_INFO, "serving on vsock port %d", config->vsock_port);
}

bool server_start(struct event_base *base, const struct boxd_config *config, char *error,
		  size_t error_size)
{
	http = evhttp_new(base);
	api_attach(http, base, config);
	/* A client that connects and says nothing, or stops halfway through its
	 * request, is dropped after this long. */
	evhttp_set_timeout(http, config->idle_timeout_sec);

	unix_fd = listeners_open_unix(config->socket_path, error, error_size);
	if (unix_fd < 0)
		return false;
	listeners_guard_unix(unix_fd);
	if (!evhttp_accept_socket_with_handle(http, unix_fd))
		return text_fail(error, error_size, "cannot serve on %s", config->socket_path);
	socket_path = xstrdup(config->socket_path);
	log_msg(LOG_LEVEL_INFO, "serving on %s", socket_path);
	serve_vsock(config);
	return true;
}

void server_stop(void)
{
	if (http) {
		/* evhttp_free closes the bound sockets and every connection. */
		evhttp_free(http);
		http = NULL;
	}
	if (unix_fd >= 0)
		listeners_unguard(unix_fd);
	if (vsock_fd >= 0)
		listeners_unguard(vsock_fd);
	unix_fd = vsock_fd = -1;
	if (socket_path) {
		unlink(socket_path);
		free(socket_path);
		socket_path = NULL;
	}
}
