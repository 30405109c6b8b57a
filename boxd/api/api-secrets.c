/* api-secrets.c: PUT/GET /v1/secrets and PUT /v1/env/{service}. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "router.h"
#include "dotenv.h"
#include "secrets.h"
#include "steps.h"
#include "xalloc.h"

#define MAX_SECRETS 1000

static cJSON *names_answer(cJSON *names)
{
	cJSON *answer = cJSON_CreateObject();
	cJSON_AddItemToObject(answer, "names", names);
	return answer;
}

/* The request held the values: wipe its body and parsed strings before it
 * is freed (best effort: libevent may have copied the body while reading). */
static void wipe_request(struct api_request *req, const cJSON *secrets)
{
	const cJSON *item;
	cJSON_ArrayForEach(item, secrets) if (cJSON_IsString(item))
		explicit_bzero(item->valuestring, strlen(item->valuestring));
	size_t body_len;
	const void *raw = api_body(req, &body_len);
	if (body_len)
		explicit_bzero((void *)raw, body_len);
}

static void handle_put_secrets(struct api_request *req)
{
	cJSON *body = api_body_json(req);
	if (!body)
		return;
	const cJSON *secrets = cJSON_GetObjectItemCaseSensitive(body, "secrets");
	if (!cJSON_IsObject(secrets)) {
		wipe_request(req, NULL);
		api_reply_bad_request(req, "`secrets` must be an object of NAME: value strings");
		return;
	}
	int count = cJSON_GetArraySize(secrets);
	const char **names = xcalloc((size_t)count + 1, sizeof *names);
	const char **values = xcalloc((size_t)count + 1, sizeof *values);
	int n = 0;
	const cJSON *item;
	char error[256];
	cJSON_ArrayForEach(item, secrets)
	{
		if (!cJSON_IsString(item)) {
			snprintf(error, sizeof error, "the secret %.80s must be a string",
				 item->string);
			goto refuse;
		}
		names[n] = item->string;
		values[n++] = item->valuestring;
	}
	if (count > MAX_SECRETS) {
		snprintf(error, sizeof error, "%d secrets given; at most %d", count, MAX_SECRETS);
		goto refuse;
	}
	if (!secrets_replace(names, values, (size_t)n, error, sizeof error))
		goto refuse;
	wipe_request(req, secrets);
	steps_add("secrets", "set %d secrets", n);
	api_reply_json(req, 200, names_answer(secrets_names_json()));
	goto out;
refuse:
	wipe_request(req, secrets);
	api_reply_bad_request(req, "%s", error);
out:
	free(names);
	free(values);
}

static void handle_get_secrets(struct api_request *req)
{
	api_reply_json(req, 200, names_answer(secrets_names_json()));
}

static bool valid_service(const char *service)
{
	size_t len = strlen(service);
	if (len == 0 || len > 100 || service[0] == '.')
		return false;
	for (const char *c = service; *c; c++)
		if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		      (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' || *c == '.'))
			return false;
	return true;
}

/* The body holds the values: every answer goes only after it is wiped (an
 * answer frees the request, body included). */
static void handle_put_env(struct api_request *req)
{
	const char *service = api_param(req, 0);
	if (!valid_service(service)) {
		wipe_request(req, NULL);
		api_reply_bad_request(
			req,
			"the service name %.100s must be letters, digits, '_', '-' or '.', "
			"not starting with '.'",
			service);
		return;
	}
	size_t len;
	const char *text = api_body(req, &len);
	char error[512];
	struct dotenv env;
	if (!dotenv_parse(text, len, &env, error, sizeof error)) {
		wipe_request(req, NULL);
		api_reply_bad_request(req, "the dotenv body is malformed: %s", error);
		return;
	}
	dotenv_free(&env);

	cJSON *names = NULL;
	char *path = secrets_write_env(service, text, len, &names, error, sizeof error);
	int write_error = errno;
	wipe_request(req, NULL);
	if (!path) {
		api_reply_write_failed(req, write_error, "%s", error);
		return;
	}
	steps_add("env", "wrote the settings of %s (%d names)", service, cJSON_GetArraySize(names));
	cJSON *answer = cJSON_CreateObject();
	/* Masked like everything boxd returns (a service may be named after a
	 * value). */
	char *shown = secrets_mask_text(path);
	cJSON_AddStringToObject(answer, "path", shown);
	free(shown);
	cJSON_AddItemToObject(answer, "names", names);
	api_reply_json(req, 200, answer);
	free(path);
}

const struct api_route api_secrets_routes[] = {
	{"PUT", "/v1/secrets", API_IDEMPOTENT | API_FOR_CONTROL, 0, handle_put_secrets},
	{"GET", "/v1/secrets", 0, 0, handle_get_secrets},
	{"PUT", "/v1/env/{}", API_IDEMPOTENT | API_FOR_CONTROL, 0, handle_put_env},
	{0},
};
