/* credhelper.c: one GET to boxd for a credential helper (credhelper.h). */
#include "credhelper.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "io.h"
#include "xalloc.h"

#define DEFAULT_SOCKET "/run/boxd/boxd.sock"

char *credhelper_query_value(const char *text)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = xmalloc(strlen(text) * 3 + 1), *o = out;
	for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
		if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		    (*c >= '0' && *c <= '9') || strchr("-._~", *c)) {
			*o++ = (char)*c;
		} else {
			*o++ = '%';
			*o++ = hex[*c >> 4];
			*o++ = hex[*c & 15];
		}
	}
	*o = '\0';
	return out;
}

int credhelper_get(const char *program, const char *path)
{
	const char *socket_path = getenv("BOXD_SOCKET");
	if (!socket_path || !socket_path[0])
		socket_path = DEFAULT_SOCKET;
	char error[512];
	struct client *client = client_connect(socket_path, error, sizeof error);
	if (!client) {
		fprintf(stderr, "%s: %s\n", program, error);
		return -1;
	}
	struct client_response response = {0};
	int status = -1;
	if (!client_request(client, "GET", path, NULL, NULL, 0, NULL, &response, error,
			    sizeof error)) {
		fprintf(stderr, "%s: %s\n", program, error);
	} else {
		status = response.status;
		if (status == 200 &&
		    !io_write_all(STDOUT_FILENO, response.body, response.body_length))
			status = -1;
		else if (status != 200 && status != 404)
			fprintf(stderr, "%s: boxd answered %d: %.400s\n", program, status,
				response.body ? response.body : "");
		if (response.body)
			explicit_bzero(response.body, response.body_length);
	}
	client_response_free(&response);
	client_close(client);
	return status;
}

char *credhelper_read_stdin(void)
{
	size_t length;
	return io_read_to_end(STDIN_FILENO, 64 * 1024, &length);
}
