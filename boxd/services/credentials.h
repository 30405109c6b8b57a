/* credentials.h: the credentials the box's tools pick up (docs/credentials.md).
 *
 * Git hosts and Docker registries name a secret of the PUT set (secrets.h),
 * never hold a value: boxd's credential helpers (git-credential-boxd,
 * docker-credential-boxd) ask boxd at each use, so a rotated secret takes
 * effect on the next git or docker call and no value is written anywhere.
 * The AWS web identity token is a value (the contract's): it is written to
 * RUN_DIR/aws-web-identity-token (0600, replaced whole) and masked as the
 * secrets are. The table (names, never values) is kept in
 * RUN_DIR/credentials.json so a restart of boxd keeps it. Everything here
 * runs on the event loop thread. */
#ifndef BOXD_CREDENTIALS_H
#define BOXD_CREDENTIALS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* Reads the saved table and the token file back (the token joins the masked
 * set), and brings the Docker configs in line with the registries.
 * `docker_user`: the default user of commands, whose Docker config gets the
 * credHelpers entries besides root's. Both are copied. */
void credentials_init(const char *run_dir, const char *docker_user);
void credentials_shutdown(void);

/* Sets (or replaces) the credential of git `host` (host or host:port).
 * False with a sentence in `error` for a bad host, username or secret name
 * (an unknown secret is named); nothing changes then. */
bool credentials_set_git(const char *host, const char *username, const char *secret, char *error,
			 size_t error_size);
/* Sets (or replaces) the credential of Docker registry `registry`
 * (host[:port]); as credentials_set_git otherwise. Also writes the
 * credHelpers entry into the Docker configs. */
bool credentials_set_registry(const char *registry, const char *username, const char *secret,
			      char *error, size_t error_size);
/* Sets the AWS role: validates, writes the token file whole, masks the
 * token. False with a sentence in `error` (and errno, when the file could
 * not be written: then *write_failed is true). */
bool credentials_set_aws(const char *role_arn, const char *token, const char *region,
			 bool *write_failed, char *error, size_t error_size);
/* Forget one entry; false when there was none. */
bool credentials_remove_git(const char *host);
bool credentials_remove_registry(const char *registry);
bool credentials_remove_aws(void);

/* {"git": [{"host","username","secret","secretSet"}], "registries": [...],
 * "aws": {"roleArn","region","tokenFile"} | null}: names only. */
cJSON *credentials_json(void);

/* What git-credential-boxd prints for a `get` of `protocol`://`host`:
 * "username=..\npassword=..\n" (caller wipes and frees), or NULL when no
 * credential is set for it or its secret is gone. */
char *credentials_git_answer(const char *protocol, const char *host);
/* What docker-credential-boxd prints for a `get` of `server` (a registry,
 * with or without a scheme and path): {"ServerURL","Username","Secret"} as
 * JSON text (caller wipes and frees), or NULL. */
char *credentials_registry_answer(const char *server);
/* docker-credential-boxd's `list`: {"registry": "username", ...}. */
char *credentials_registry_list(void);

/* Calls `fn` with each "NAME=value" entry the AWS role adds to a command's
 * environment. */
void credentials_env_foreach(void (*fn)(const char *entry, void *ctx), void *ctx);

/* For credentials-docker.c: calls `fn` with each registry set. */
void credentials_foreach_registry(void (*fn)(const char *registry, void *ctx), void *ctx);
/* Rewrites the credHelpers entries of the Docker configs (credentials-docker.c). */
void credentials_docker_sync(const char *docker_user);

#endif
