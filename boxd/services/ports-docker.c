/* ports-docker.c: Docker's containers, their names and published ports
 * (ports-docker.h).
 *
 * The request is HTTP/1.0, so Docker answers without chunks and closes the
 * connection at the end of its answer: the probe's "answer ends at close"
 * mode reads it whole whatever its length, with no HTTP client in boxd. */
#include "ports-docker.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "probe.h"
#include "xalloc.h"

/* A few KiB per container: room for some thousands. */
#define DOCKER_ANSWER_MAX (8u << 20)

static const char request[] = "GET /containers/json HTTP/1.0\r\nHost: docker\r\n\r\n";

struct docker_call {
	ports_docker_fn done;
	void *arg;
};

static void on_answer(void *arg, bool answered, bool timed_out, const unsigned char *answer,
		      size_t length)
{
	(void)timed_out;
	struct docker_call *call = arg;
	struct docker_containers containers = {0};
	bool parsed = answered && ports_docker_parse((const char *)answer, length, &containers);
	call->done(call->arg, parsed ? &containers : NULL);
	ports_docker_free(&containers);
	free(call);
}

void ports_docker_list(struct event_base *base, ports_docker_fn done, void *arg)
{
	struct docker_call *call = xcalloc(1, sizeof *call);
	call->done = done;
	call->arg = arg;
	struct probe_spec spec = {
		.path = PORTS_DOCKER_SOCKET,
		.request = request,
		.request_length = sizeof request - 1,
		.timeout_ms = PORTS_DOCKER_TIMEOUT_MS,
	};
	probe_ask(base, &spec, DOCKER_ANSWER_MAX, on_answer, call);
}

const struct docker_container *ports_docker_find(const struct docker_containers *containers,
						 const char *id)
{
	for (size_t i = 0; containers && i < containers->count; i++)
		if (!strcmp(containers->items[i].id, id))
			return &containers->items[i];
	return NULL;
}

unsigned ports_docker_host_port(const struct docker_container *container, unsigned port)
{
	for (size_t i = 0; container && i < container->port_count; i++)
		if (container->ports[i].container_port == port)
			return container->ports[i].host_port;
	return 0;
}

/* ---- parsing ---- */

/* The value of header `name` in the NUL-terminated head `head`, to its
 * line's end, into `value`: false when the head has no such header. */
static bool header_value(const char *head, const char *name, char *value, size_t size)
{
	size_t name_length = strlen(name);
	for (const char *line = strchr(head, '\n'); line; line = strchr(line, '\n')) {
		line++;
		if (strncasecmp(line, name, name_length) || line[name_length] != ':')
			continue;
		const char *start = line + name_length + 1;
		snprintf(value, size, "%.*s", (int)strcspn(start, "\r\n"), start);
		return true;
	}
	return false;
}

/* The body of a 200 answer that is not chunked, or NULL. */
static const char *http_body(const char *answer, size_t length, size_t *body_length)
{
	const char *end = memmem(answer, length, "\r\n\r\n", 4);
	if (!end)
		return NULL;
	end += 4;
	char *head = xstrndup(answer, (size_t)(end - answer)), value[64];
	int status = 0;
	bool ok = sscanf(head, "HTTP/1.%*d %d", &status) == 1 && status == 200;
	/* Never for an HTTP/1.0 request; not read if it came all the same. */
	if (header_value(head, "Transfer-Encoding", value, sizeof value) &&
	    strstr(value, "chunked"))
		ok = false;
	*body_length = length - (size_t)(end - answer);
	if (header_value(head, "Content-Length", value, sizeof value)) {
		unsigned long long declared = strtoull(value, NULL, 10);
		if (declared < *body_length)
			*body_length = (size_t)declared;
	}
	free(head);
	return ok ? end : NULL;
}

static bool is_container_id(const char *id)
{
	if (strlen(id) != 64)
		return false;
	for (const char *c = id; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
			return false;
	return true;
}

static void add_ports(struct docker_container *container, const cJSON *ports)
{
	const cJSON *port;
	cJSON_ArrayForEach(port, ports)
	{
		const cJSON *inside = cJSON_GetObjectItemCaseSensitive(port, "PrivatePort");
		const cJSON *outside = cJSON_GetObjectItemCaseSensitive(port, "PublicPort");
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(port, "Type");
		if (!cJSON_IsNumber(inside) || !cJSON_IsNumber(outside) || !cJSON_IsString(type) ||
		    strcmp(type->valuestring, "tcp") || outside->valuedouble < 1 ||
		    outside->valuedouble > 65535)
			continue;
		container->ports = xrealloc(container->ports,
					    (container->port_count + 1) * sizeof *container->ports);
		container->ports[container->port_count++] = (struct docker_port){
			(unsigned)inside->valuedouble, (unsigned)outside->valuedouble};
	}
}

static void add_container(struct docker_containers *containers, const cJSON *item)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "Id");
	if (!cJSON_IsString(id) || !is_container_id(id->valuestring))
		return;
	containers->items =
		xrealloc(containers->items, (containers->count + 1) * sizeof *containers->items);
	struct docker_container *container = &containers->items[containers->count++];
	*container = (struct docker_container){.id = xstrdup(id->valuestring)};
	const cJSON *name = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(item, "Names"), 0);
	if (cJSON_IsString(name))
		container->name = xstrdup(name->valuestring + (name->valuestring[0] == '/'));
	add_ports(container, cJSON_GetObjectItemCaseSensitive(item, "Ports"));
}

bool ports_docker_parse(const char *answer, size_t length, struct docker_containers *containers)
{
	*containers = (struct docker_containers){0};
	size_t body_length = 0;
	const char *body = answer ? http_body(answer, length, &body_length) : NULL;
	cJSON *list = body ? cJSON_ParseWithLength(body, body_length) : NULL;
	bool ok = cJSON_IsArray(list);
	const cJSON *item;
	if (ok)
		cJSON_ArrayForEach(item, list) add_container(containers, item);
	cJSON_Delete(list);
	return ok;
}

void ports_docker_free(struct docker_containers *containers)
{
	for (size_t i = 0; i < containers->count; i++) {
		free(containers->items[i].id);
		free(containers->items[i].name);
		free(containers->items[i].ports);
	}
	free(containers->items);
	*containers = (struct docker_containers){0};
}
