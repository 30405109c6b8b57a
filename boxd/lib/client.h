/* client.h: a small blocking HTTP/1.1 client over boxd's unix socket, for
 * boxctl and the benchmarks. One request at a time on a kept-alive
 * connection; bodies with Content-Length or chunked encoding. */
#ifndef BOXD_CLIENT_H
#define BOXD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

struct client;

struct client_header {
	char *name;
	char *value;
};

struct client_response {
	int status;
	struct client_header *headers;
	size_t header_count;
	char *body; /* NUL-terminated; NULL when streamed to a callback */
	size_t body_length;
};

/* Connects; on failure returns NULL with a sentence in `error`. */
struct client *client_connect(const char *socket_path, char *error, size_t error_size);
void client_close(struct client *client);

/* Sends one request and reads the whole answer into `response`.
 * `extra_headers` is NULL or "Name: value\r\n..." lines. Returns false on a
 * transport failure, with a sentence in `error`. */
bool client_request(struct client *client, const char *method, const char *path,
		    const char *content_type, const void *body, size_t body_length,
		    const char *extra_headers, struct client_response *response, char *error,
		    size_t error_size);

/* As client_request, but hands the body to `on_data` piece by piece as it
 * arrives (after dechunking); `on_data` returns false to stop early (the
 * connection is then closed). response->body stays NULL. */
bool client_request_stream(struct client *client, const char *method, const char *path,
			   const char *content_type, const void *body, size_t body_length,
			   const char *extra_headers,
			   bool (*on_data)(void *arg, const char *data, size_t length), void *arg,
			   struct client_response *response, char *error, size_t error_size);

/* Asks to switch protocols: GET `path` with `extra_headers` (Upgrade: and
 * the rest). True with response->status 101 when the server switched: the
 * connection is then the new protocol's (client_fd, client_take_buffered),
 * and client_close still closes it. True with any other status when the
 * server refused, its body read into response->body. False on a transport
 * failure, with a sentence in `error`. */
bool client_upgrade(struct client *client, const char *path, const char *extra_headers,
		    struct client_response *response, char *error, size_t error_size);
/* The connection's socket, for a protocol the client does not speak. */
int client_fd(const struct client *client);
/* Hands over up to `size` bytes the client read past the last answer
 * (after a 101, the first bytes of the new protocol); returns how many. */
size_t client_take_buffered(struct client *client, void *out, size_t size);

/* Case-insensitive header lookup; NULL when absent. */
const char *client_response_header(const struct client_response *response, const char *name);
void client_response_free(struct client_response *response);

#endif
