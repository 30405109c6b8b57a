/* docker-credential-boxd: Docker's credential helper for the registries set
 * with PUT /v1/credentials/registry (docs/credentials.md). Docker runs it
 * as `docker-credential-boxd get|list|store|erase` (the credHelpers entry
 * "boxd" that boxd writes into the Docker config names it). `get` reads the
 * server URL on stdin and prints {"ServerURL","Username","Secret"}, asked of
 * boxd each time; an unknown server is Docker's "credentials not found in
 * native keychain" with exit 1. `list` prints {"registry": "username"}.
 * `store` and `erase` accept and do nothing: `docker login`/`logout` must
 * not change what boxd holds. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credhelper.h"
#include "xalloc.h"

#define PROGRAM "docker-credential-boxd"
#define NOT_FOUND "credentials not found in native keychain"

static int get(void)
{
	char *server = credhelper_read_stdin();
	if (!server) {
		puts("cannot read the server URL on stdin");
		return 1;
	}
	char *end = server + strlen(server);
	while (end > server && isspace((unsigned char)end[-1]))
		*--end = '\0';
	char *start = server;
	while (isspace((unsigned char)*start))
		start++;
	if (!*start) {
		puts("no server URL given on stdin");
		free(server);
		return 1;
	}
	char *value = credhelper_query_value(start);
	char *path = xasprintf("/v1/credentials/registry/get?server=%s", value);
	fflush(stdout);
	int status = credhelper_get(PROGRAM, path);
	free(path);
	free(value);
	free(server);
	if (status == 200)
		return 0;
	/* Docker shows what the helper printed; the "not found" sentence
	 * makes it carry on anonymously, as without a helper. */
	puts(NOT_FOUND);
	return 1;
}

static int list(void)
{
	free(credhelper_read_stdin());
	fflush(stdout);
	if (credhelper_get(PROGRAM, "/v1/credentials/registry/list") == 200)
		return 0;
	puts("cannot list the registries: boxd did not answer");
	return 1;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "get") == 0)
		return get();
	if (argc == 2 && strcmp(argv[1], "list") == 0)
		return list();
	if (argc == 2 && (strcmp(argv[1], "store") == 0 || strcmp(argv[1], "erase") == 0)) {
		free(credhelper_read_stdin());
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "version") == 0) {
		puts(PROGRAM " (boxd)");
		return 0;
	}
	fprintf(stderr, "usage: %s get|list|store|erase (Docker runs it: credHelpers)\n", PROGRAM);
	return 1;
}
