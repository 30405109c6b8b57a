/* api-credentials.c: the credentials the box's tools pick up
 * (docs/credentials.md): PUT/DELETE git hosts, registries and the AWS role,
 * GET the table (names, never values), and the two routes boxd's credential
 * helpers ask at each use. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "router.h"
#include "credentials.h"
#include "steps.h"

/* A required string field, or NULL after a 400 naming it. */
static const char *string_field(struct api_request *req, const cJSON *body, const char *name)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(body, name);
	if (cJSON_IsString(item))
		return item->valuestring;
	api_reply_bad_request(req, "`%s` is required and must be a string%s", name,
			      item ? "" : " (it is missing)");
	return NULL;
}

static void reply_table(struct api_request *req)
{
	api_reply_json(req, 200, credentials_json());
}

static void handle_get(struct api_request *req)
{
	reply_table(req);
}

static void put_entry(struct api_request *req, const char *key,
		      bool (*set)(const char *, const char *, const char *, char *, size_t),
		      const char *what)
{
	cJSON *body = api_body_json(req);
	if (!body)
		return;
	const char *host, *username, *secret;
	if (!(host = string_field(req, body, key)) ||
	    !(username = string_field(req, body, "username")) ||
	    !(secret = string_field(req, body, "secret")))
		return;
	char error[512];
	if (!set(host, username, secret, error, sizeof error)) {
		api_reply_bad_request(req, "%s", error);
		return;
	}
	steps_add("credentials", "%s %s: %s with the secret %s", what, host, username, secret);
	reply_table(req);
}

static void handle_put_git(struct api_request *req)
{
	put_entry(req, "host", credentials_set_git, "git credential for");
}

static void handle_put_registry(struct api_request *req)
{
	put_entry(req, "registry", credentials_set_registry, "registry credential for");
}

static void remove_entry(struct api_request *req, bool (*remove)(const char *), const char *what)
{
	const char *name = api_param(req, 0);
	if (!remove(name)) {
		api_reply_not_found(req, "no %s credential is set for %.300s", what, name);
		return;
	}
	steps_add("credentials", "%s credential for %s removed", what, name);
	reply_table(req);
}

static void handle_delete_git(struct api_request *req)
{
	remove_entry(req, credentials_remove_git, "git");
}

static void handle_delete_registry(struct api_request *req)
{
	remove_entry(req, credentials_remove_registry, "registry");
}

/* The token is a value: wiped from the request before any answer. */
static void wipe_token(struct api_request *req, const cJSON *body)
{
	const cJSON *token = cJSON_GetObjectItemCaseSensitive(body, "webIdentityToken");
	if (cJSON_IsString(token))
		explicit_bzero(token->valuestring, strlen(token->valuestring));
	size_t length;
	const void *raw = api_body(req, &length);
	if (length)
		explicit_bzero((void *)raw, length);
}

static void handle_put_aws(struct api_request *req)
{
	cJSON *body = api_body_json(req);
	if (!body)
		return;
	const char *fields[] = {"roleArn", "webIdentityToken", "region"};
	const char *values[3];
	for (int i = 0; i < 3; i++) {
		const cJSON *item = cJSON_GetObjectItemCaseSensitive(body, fields[i]);
		values[i] = cJSON_GetStringValue(item);
		if (!cJSON_IsString(item)) {
			wipe_token(req, body);
			api_reply_bad_request(req, "`%s` is required and must be a string%s",
					      fields[i], item ? "" : " (it is missing)");
			return;
		}
	}
	char error[512];
	bool write_failed;
	if (!credentials_set_aws(values[0], values[1], values[2], &write_failed, error,
				 sizeof error)) {
		int failure = errno;
		wipe_token(req, body);
		if (write_failed)
			api_reply_write_failed(req, failure, "%s", error);
		else
			api_reply_bad_request(req, "%s", error);
		return;
	}
	wipe_token(req, body);
	steps_add("credentials", "AWS role %s in %s", values[0], values[2]);
	reply_table(req);
}

static void handle_delete_aws(struct api_request *req)
{
	if (!credentials_remove_aws()) {
		api_reply_not_found(req, "no AWS role is set");
		return;
	}
	steps_add("credentials", "AWS role removed");
	reply_table(req);
}

/* The helpers' answers hold a value: they go out as bytes, unmasked (the
 * one purpose of these routes), and are wiped once handed to the socket. */
static void reply_value(struct api_request *req, char *text, const char *content_type)
{
	api_reply_bytes(req, 200, content_type, text, strlen(text));
	explicit_bzero(text, strlen(text));
	free(text);
}

/* GET /v1/credentials/git/fill?protocol=https&host=github.com: what
 * git-credential-boxd prints for git's `get`. */
static void handle_git_fill(struct api_request *req)
{
	const char *protocol = api_query(req, "protocol");
	const char *host = api_query(req, "host");
	if (!protocol || !host) {
		api_reply_bad_request(req, "`protocol` and `host` are required query parameters");
		return;
	}
	char *answer = credentials_git_answer(protocol, host);
	if (!answer) {
		api_reply_not_found(req, "no git credential is set for %.300s://%.300s", protocol,
				    host);
		return;
	}
	reply_value(req, answer, "text/plain");
}

/* GET /v1/credentials/registry/get?server=URL: docker-credential-boxd's
 * `get`. */
static void handle_registry_get(struct api_request *req)
{
	const char *server = api_query(req, "server");
	if (!server || !server[0]) {
		api_reply_bad_request(req, "`server` is a required query parameter");
		return;
	}
	char *answer = credentials_registry_answer(server);
	if (!answer) {
		api_reply_not_found(req, "no registry credential is set for %.300s", server);
		return;
	}
	reply_value(req, answer, "application/json");
}

static void handle_registry_list(struct api_request *req)
{
	char *list = credentials_registry_list();
	api_reply_bytes(req, 200, "application/json", list, strlen(list));
	free(list);
}

const struct api_route api_credentials_routes[] = {
	{"GET", "/v1/credentials", 0, 0, handle_get},
	{"PUT", "/v1/credentials/git", API_IDEMPOTENT | API_FOR_CONTROL, 0, handle_put_git},
	{"DELETE", "/v1/credentials/git/{}", API_IDEMPOTENT | API_FOR_CONTROL, 0,
	 handle_delete_git},
	{"PUT", "/v1/credentials/registry", API_IDEMPOTENT | API_FOR_CONTROL, 0,
	 handle_put_registry},
	{"DELETE", "/v1/credentials/registry/{}", API_IDEMPOTENT | API_FOR_CONTROL, 0,
	 handle_delete_registry},
	{"PUT", "/v1/credentials/aws", API_IDEMPOTENT | API_FOR_CONTROL, 0, handle_put_aws},
	{"DELETE", "/v1/credentials/aws", API_IDEMPOTENT | API_FOR_CONTROL, 0, handle_delete_aws},
	{"GET", "/v1/credentials/git/fill", 0, 0, handle_git_fill},
	{"GET", "/v1/credentials/registry/get", 0, 0, handle_registry_get},
	{"GET", "/v1/credentials/registry/list", 0, 0, handle_registry_list},
	{0},
};
