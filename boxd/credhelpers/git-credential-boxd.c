/* git-credential-boxd: git's credential helper for the hosts set with
 * PUT /v1/credentials/git (docs/credentials.md). git runs it as
 * `git-credential-boxd get|store|erase` with the request's attributes on
 * stdin (gitcredentials(7)). `get` asks boxd for the host's username and
 * secret each time (so a rotated secret is used at the next call) and
 * prints them; nothing is kept. `store` and `erase` do nothing: the
 * credential is boxd's, and git's erase after a refused password must not
 * drop it. Anything it cannot answer it leaves to git's next helper or
 * prompt: it prints nothing and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credhelper.h"
#include "xalloc.h"

#define PROGRAM "git-credential-boxd"

/* The value of `key=` among the request's lines, or NULL (points into
 * `request`, whose line ends are made NULs). */
static const char *attribute(char *request, size_t length, const char *key)
{
	size_t key_length = strlen(key);
	for (char *line = request; line < request + length; line += strlen(line) + 1)
		if (strncmp(line, key, key_length) == 0 && line[key_length] == '=')
			return line + key_length + 1;
	return NULL;
}

static int get(void)
{
	char *request = credhelper_read_stdin();
	if (!request)
		return 0;
	size_t length = strlen(request);
	for (char *c = request; *c; c++)
		if (*c == '\n')
			*c = '\0';
	const char *protocol = attribute(request, length, "protocol");
	const char *host = attribute(request, length, "host");
	if (protocol && host && host[0]) {
		char *p = credhelper_query_value(protocol), *h = credhelper_query_value(host);
		char *path = xasprintf("/v1/credentials/git/fill?protocol=%s&host=%s", p, h);
		credhelper_get(PROGRAM, path);
		free(path);
		free(p);
		free(h);
	}
	free(request);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "get") == 0)
		return get();
	if (argc == 2 && (strcmp(argv[1], "store") == 0 || strcmp(argv[1], "erase") == 0)) {
		free(credhelper_read_stdin());
		return 0;
	}
	fprintf(stderr,
		"usage: %s get|store|erase (git runs it: credential.helper; see "
		"gitcredentials(7))\n",
		PROGRAM);
	return 2;
}
