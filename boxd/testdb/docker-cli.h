/* docker-cli.h: psbx-testdb speaks to Docker through its own CLI, as a
 * person in the box would: the engine's messages (a pull's progress, "no
 * such image", an auth error from the registry) reach the user as Docker
 * wrote them, and DOCKER_HOST and the CLI's config are honoured. */
#ifndef PSBX_DOCKER_CLI_H
#define PSBX_DOCKER_CLI_H

#include <stdbool.h>
#include <stddef.h>

/* What one docker call gave back. */
struct docker_result {
	int status; /* exit status; -1: not run, or killed by a signal */
	char *out;  /* its stdout, NUL-terminated, trailing newlines cut */
	char *err;  /* its stderr, the same ("" when passed through) */
};

/* Runs `docker ARGS...` (NULL-terminated) and waits for it. Stdout and
 * stderr are captured; with `pass_stderr` stderr goes to ours as it comes
 * instead (a pull's progress). */
struct docker_result docker_call(const char *const args[], bool pass_stderr);

void docker_result_free(struct docker_result *result);

/* True when the Docker daemon can be reached; false with a sentence for
 * the user in `error` (docker not installed, daemon not running). A
 * DOCKER_HOST that is not a unix socket is left to the CLI to judge. */
bool docker_reachable(char *error, size_t size);

#endif
