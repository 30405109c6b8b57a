/* ctl.c: what every boxctl subcommand shares: calling the API, printing
 * errors the same way. */
#include "ctl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "xalloc.h"

struct client *ctl_client(struct ctl *ctl)
{
	if (ctl->client)
		return ctl->client;
	char error[512];
	ctl->client = client_connect(ctl->socket_path, error, sizeof error);
	if (!ctl->client)
		fprintf(stderr, "boxctl: %s\n", error);
	return ctl->client;
}

int ctl_call_raw(struct ctl *ctl, const char *method, const char *path, const char *content_type,
		 const void *body, size_t body_length, const char *extra_headers,
		 struct client_response *response)
{
	struct client *client = ctl_client(ctl);
	if (!client)
		return CTL_API_ERROR;
	char error[512];
	if (!client_request(client, method, path, content_type, body, body_length, extra_headers,
			    response, error, sizeof error)) {
		fprintf(stderr, "boxctl: %s\n", error);
		return CTL_API_ERROR;
	}
	return CTL_OK;
}

void ctl_print_api_error(const struct client_response *response)
{
	cJSON *json = cJSON_ParseWithLength(response->body, response->body_length);
	cJSON *error = json ? cJSON_GetObjectItem(json, "error") : NULL;
	cJSON *message = error ? cJSON_GetObjectItem(error, "message") : NULL;
	cJSON *code = error ? cJSON_GetObjectItem(error, "code") : NULL;
	const char *text = cJSON_GetStringValue(message), *name = cJSON_GetStringValue(code);
	if (text)
		fprintf(stderr, "boxctl: %s (%s)\n", text, name ? name : "error");
	else
		fprintf(stderr, "boxctl: boxd answered HTTP %d\n", response->status);
	cJSON_Delete(json);
}

int ctl_call(struct ctl *ctl, const char *method, const char *path, const cJSON *body,
	     cJSON **answer)
{
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	int status = ctl_call_body(ctl, method, path, text ? "application/json" : NULL, text,
				   text ? strlen(text) : 0, answer);
	free(text);
	return status;
}

int ctl_call_body(struct ctl *ctl, const char *method, const char *path, const char *content_type,
		  const void *body, size_t body_length, cJSON **answer)
{
	if (answer)
		*answer = NULL;
	struct client_response response;
	int status =
		ctl_call_raw(ctl, method, path, content_type, body, body_length, NULL, &response);
	if (status != CTL_OK)
		return status;
	if (response.status < 200 || response.status > 299) {
		if (ctl->json)
			printf("%s\n", response.body);
		else
			ctl_print_api_error(&response);
		client_response_free(&response);
		return CTL_API_ERROR;
	}
	if (answer && response.body_length) {
		*answer = cJSON_ParseWithLength(response.body, response.body_length);
		if (!*answer) {
			fprintf(stderr, "boxctl: boxd answered with JSON that does not parse\n");
			client_response_free(&response);
			return CTL_API_ERROR;
		}
	}
	client_response_free(&response);
	return CTL_OK;
}

bool ctl_print_json(struct ctl *ctl, const cJSON *json)
{
	if (!ctl->json)
		return false;
	char *text = cJSON_Print(json);
	printf("%s\n", text);
	free(text);
	return true;
}

int ctl_usage_error(const char *command, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "boxctl %s: ", command);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	return CTL_USAGE;
}

char *ctl_url_encode(const char *text)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = xmalloc(strlen(text) * 3 + 1), *p = out;
	for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
		if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || strchr("-_.~/", *c)) {
			*p++ = (char)*c;
		} else {
			*p++ = '%';
			*p++ = hex[*c >> 4];
			*p++ = hex[*c & 15];
		}
	}
	*p = '\0';
	return out;
}

char *ctl_read_all(int fd, size_t *length)
{
	size_t capacity = 1 << 16;
	char *data = xmalloc(capacity);
	*length = 0;
	for (;;) {
		if (*length + 1 >= capacity)
			data = xrealloc(data, capacity *= 2);
		ssize_t got = read(fd, data + *length, capacity - *length - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int saved = errno;
			free(data);
			errno = saved;
			return NULL;
		}
		if (got == 0)
			break;
		*length += (size_t)got;
	}
	data[*length] = '\0';
	return data;
}
