/* services-table.c: the services table as data: parsing and checking what
 * a caller sent, the names' addresses, the JSON it is shown as, and the
 * file that carries it across a restart of boxd. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "services-internal.h"
#include "text.h"
#include "xalloc.h"

/* ---- checking ---- */

static bool is_label_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

/* DNS labels of [a-z0-9-], 1 to 63 each, no hyphen at either end, dots
 * between them. */
static bool valid_name(const char *name)
{
	size_t length = strlen(name);
	if (length == 0 || length > SERVICES_NAME_MAX)
		return false;
	size_t label = 0;
	for (size_t i = 0; i <= length; i++) {
		char c = name[i];
		if (c == '.' || c == '\0') {
			if (label == 0 || label > 63 || name[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!is_label_char(c) || (label == 0 && c == '-'))
			return false;
		label++;
	}
	return true;
}

/* A port field: absent gives `fallback` (0: required). */
static bool parse_port(const cJSON *json, const char *field, const char *at, unsigned fallback,
		       unsigned *out, char *error, size_t size)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(json, field);
	if (!item && fallback) {
		*out = fallback;
		return true;
	}
	if (!item || !cJSON_IsNumber(item) ||
	    item->valuedouble != (double)(long)item->valuedouble || item->valuedouble < 1 ||
	    item->valuedouble > 65535)
		return text_fail(error, size, "%s.%s must be a port number, 1 to 65535", at, field);
	*out = (unsigned)item->valuedouble;
	return true;
}

static bool parse_unsigned(const char *text, unsigned long max, unsigned *out)
{
	if (!*text || !isdigit((unsigned char)*text))
		return false;
	char *end;
	errno = 0;
	unsigned long value = strtoul(text, &end, 10);
	if (errno || *end || value > max)
		return false;
	*out = (unsigned)value;
	return true;
}

static bool parse_vsock(const char *text, struct service *out)
{
	unsigned cid, port;
	char cid_text[16];
	const char *colon = strchr(text, ':');
	if (!colon || (size_t)(colon - text) >= sizeof cid_text)
		return false;
	memcpy(cid_text, text, (size_t)(colon - text));
	cid_text[colon - text] = '\0';
	if (!parse_unsigned(cid_text, UINT32_MAX, &cid) ||
	    !parse_unsigned(colon + 1, UINT32_MAX, &port))
		return false;
	struct sockaddr_vm *vm = (struct sockaddr_vm *)&out->target;
	memset(vm, 0, sizeof *vm);
	vm->svm_family = AF_VSOCK;
	vm->svm_cid = cid;
	vm->svm_port = port;
	out->target_length = sizeof *vm;
	return true;
}

/* "1.2.3.4:80" or "[::1]:80". Host names are refused: the kernel's rules
 * take addresses, and a name resolved once would go stale unseen. */
static bool parse_ip_port(const char *text, struct service *out)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(text, ':');
	unsigned port;
	if (!colon || (size_t)(colon - text) >= sizeof host ||
	    !parse_unsigned(colon + 1, 65535, &port) || port == 0)
		return false;
	memcpy(host, text, (size_t)(colon - text));
	host[colon - text] = '\0';
	memset(&out->target, 0, sizeof out->target);
	size_t length = strlen(host);
	if (length > 2 && host[0] == '[' && host[length - 1] == ']') {
		host[length - 1] = '\0';
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out->target;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		out->target_length = sizeof *in6;
		return inet_pton(AF_INET6, host + 1, &in6->sin6_addr) == 1;
	}
	struct sockaddr_in *in = (struct sockaddr_in *)&out->target;
	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)port);
	out->target_length = sizeof *in;
	return inet_pton(AF_INET, host, &in->sin_addr) == 1;
}

static bool parse_address(const cJSON *json, const char *at, struct service *out, char *error,
			  size_t size)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(json, "address");
	if (!cJSON_IsString(item) || !*item->valuestring)
		return text_fail(error, size, "%s.address is required for an external service", at);
	const char *text = item->valuestring;
	bool ok =
		!strncmp(text, "vsock:", 6) ? parse_vsock(text + 6, out) : parse_ip_port(text, out);
	if (!ok)
		return text_fail(
			error, size,
			"%s.address: `%.80s` is not IPv4:PORT, [IPv6]:PORT or vsock:CID:PORT", at,
			text);
	out->address = xstrdup(text);
	return true;
}

static bool parse_mode(const cJSON *json, const char *at, enum service_mode *mode, char *error,
		       size_t size)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(json, "mode");
	if (!item || (cJSON_IsString(item) && !strcmp(item->valuestring, "box")))
		*mode = SERVICE_BOX;
	else if (cJSON_IsString(item) && !strcmp(item->valuestring, "external"))
		*mode = SERVICE_EXTERNAL;
	else
		return text_fail(error, size, "%s.mode must be \"box\" or \"external\"", at);
	return true;
}

bool services_parse_entry(const cJSON *json, const char *at, struct service *out, char *error,
			  size_t size)
{
	memset(out, 0, sizeof *out);
	if (!cJSON_IsObject(json))
		return text_fail(error, size, "%s must be an object", at);
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(json, "name");
	if (!cJSON_IsString(name) || !valid_name(name->valuestring))
		return text_fail(
			error, size,
			"%s.name must be DNS labels: a-z, 0-9 and -, dots between, at most "
			"253 characters",
			at);
	if (!parse_port(json, "port", at, 0, &out->port, error, size) ||
	    !parse_port(json, "targetPort", at, out->port, &out->target_port, error, size) ||
	    !parse_mode(json, at, &out->mode, error, size))
		return false;
	if (out->mode == SERVICE_EXTERNAL && !parse_address(json, at, out, error, size))
		return false;
	out->name = xstrdup(name->valuestring);
	return true;
}

bool services_check_table(const struct services_table *table, char *error, size_t size)
{
	if (table->count > SERVICES_MAX)
		return text_fail(error, size, "services: at most %d entries", SERVICES_MAX);
	for (size_t i = 0; i < table->count; i++)
		for (size_t j = 0; j < i; j++) {
			const struct service *a = &table->entries[j], *b = &table->entries[i];
			if (!strcmp(a->name, b->name))
				return text_fail(error, size,
						 "services[%zu].name: %s is there twice", i,
						 b->name);
			/* The way in (vsock 20000 + port) must lead to one service. */
			if (a->mode == SERVICE_BOX && b->mode == SERVICE_BOX && a->port == b->port)
				return text_fail(
					error, size,
					"services[%zu].port: %u is already %s's (box services "
					"need ports of their own: the way in is by port)",
					i, b->port, a->name);
		}
	return true;
}

bool services_parse_table(const cJSON *body, struct services_table *out, char *error, size_t size)
{
	memset(out, 0, sizeof *out);
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(body, "services");
	if (!cJSON_IsArray(list))
		return text_fail(error, size, "services must be an array of entries");
	int count = cJSON_GetArraySize(list);
	if (count > SERVICES_MAX)
		return text_fail(error, size, "services: at most %d entries", SERVICES_MAX);
	out->entries = xcalloc((size_t)count + 1, sizeof *out->entries);
	const cJSON *item;
	cJSON_ArrayForEach(item, list)
	{
		char at[32];
		snprintf(at, sizeof at, "services[%zu]", out->count);
		if (!services_parse_entry(item, at, &out->entries[out->count], error, size)) {
			services_free_table(out);
			return false;
		}
		out->count++;
	}
	if (!services_check_table(out, error, size)) {
		services_free_table(out);
		return false;
	}
	return true;
}

/* ---- addresses ---- */

static bool ip_taken(const struct services_table *table, uint32_t ip)
{
	for (size_t i = 0; i < table->count; i++)
		if (table->entries[i].ip == ip)
			return true;
	return false;
}

void services_assign_ips(struct services_table *table, const struct services_table *previous)
{
	for (size_t i = 0; previous && i < table->count; i++) {
		const struct service *old = services_find(previous, table->entries[i].name);
		table->entries[i].ip = old ? old->ip : 0;
	}
	uint32_t next = SERVICES_NET | SERVICES_FIRST_HOST;
	for (size_t i = 0; i < table->count; i++) {
		if (table->entries[i].ip)
			continue;
		while (ip_taken(table, next))
			next++;
		table->entries[i].ip = next++;
	}
}

void services_ip_text(uint32_t ip, char *text, size_t size)
{
	struct in_addr address = {.s_addr = htonl(ip)};
	inet_ntop(AF_INET, &address, text, (socklen_t)size);
}

/* ---- entries and tables ---- */

struct service *services_find(const struct services_table *table, const char *name)
{
	for (size_t i = 0; i < table->count; i++)
		if (!strcmp(table->entries[i].name, name))
			return &table->entries[i];
	return NULL;
}

void services_copy_entry(struct service *to, const struct service *from)
{
	*to = *from;
	to->name = xstrdup(from->name);
	to->address = from->address ? xstrdup(from->address) : NULL;
}

void services_copy_table(struct services_table *to, const struct services_table *from)
{
	to->count = from->count;
	to->entries = xcalloc(from->count + 1, sizeof *to->entries);
	for (size_t i = 0; i < from->count; i++)
		services_copy_entry(&to->entries[i], &from->entries[i]);
}

void services_free_entry(struct service *entry)
{
	free(entry->name);
	free(entry->address);
	entry->name = entry->address = NULL;
}

void services_free_table(struct services_table *table)
{
	for (size_t i = 0; i < table->count; i++)
		services_free_entry(&table->entries[i]);
	free(table->entries);
	table->entries = NULL;
	table->count = 0;
}

bool services_listening(const struct service *entry)
{
	return entry->mode == SERVICE_BOX ? entry->reach != LISTEN_NONE : entry->accepting;
}

static const char *listener_text(const struct service *entry)
{
	if (entry->mode == SERVICE_EXTERNAL)
		return entry->accepting ? entry->address : NULL;
	switch (entry->reach) {
	case LISTEN_V4: return "127.0.0.1";
	case LISTEN_V6_LOOPBACK: return "::1";
	default: return NULL;
	}
}

/* The entry as a caller wrote it (what is saved, and the start of what
 * the API shows). */
static cJSON *entry_fields(const struct service *entry)
{
	cJSON *json = cJSON_CreateObject();
	cJSON_AddStringToObject(json, "name", entry->name);
	cJSON_AddNumberToObject(json, "port", entry->port);
	cJSON_AddNumberToObject(json, "targetPort", entry->target_port);
	cJSON_AddStringToObject(json, "mode", entry->mode == SERVICE_BOX ? "box" : "external");
	if (entry->address)
		cJSON_AddStringToObject(json, "address", entry->address);
	char ip[INET_ADDRSTRLEN];
	services_ip_text(entry->ip, ip, sizeof ip);
	cJSON_AddStringToObject(json, "ip", ip);
	return json;
}

cJSON *services_entry_json(const struct service *entry)
{
	cJSON *json = entry_fields(entry);
	cJSON_AddBoolToObject(json, "listening", services_listening(entry));
	const char *listener = listener_text(entry);
	if (listener) {
		char text[128];
		if (entry->mode == SERVICE_BOX)
			snprintf(text, sizeof text, "%s%s%s:%u", strchr(listener, ':') ? "[" : "",
				 listener, strchr(listener, ':') ? "]" : "", entry->target_port);
		else
			snprintf(text, sizeof text, "%s", listener);
		cJSON_AddStringToObject(json, "listener", text);
	} else {
		cJSON_AddNullToObject(json, "listener");
	}
	return json;
}

/* ---- across restarts ---- */

bool services_save(const char *path, const struct services_table *table)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *list = cJSON_AddArrayToObject(root, "services");
	for (size_t i = 0; i < table->count; i++)
		cJSON_AddItemToArray(list, entry_fields(&table->entries[i]));
	char *text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	bool ok = io_replace_file(path, text, strlen(text), 0600, 0);
	free(text);
	return ok;
}

void services_load(const char *path, struct services_table *table)
{
	memset(table, 0, sizeof *table);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	size_t length;
	char *text = io_read_to_end(fd, 16u << 20, &length);
	close(fd);
	if (!text)
		return;
	cJSON *root = cJSON_ParseWithLength(text, length);
	free(text);
	char error[256];
	if (!root || !services_parse_table(root, table, error, sizeof error)) {
		cJSON_Delete(root);
		return;
	}
	/* Addresses as they were: names keep theirs across the restart. */
	const cJSON *item;
	size_t i = 0;
	cJSON_ArrayForEach(item, cJSON_GetObjectItem(root, "services"))
	{
		const cJSON *ip = cJSON_GetObjectItemCaseSensitive(item, "ip");
		struct in_addr address;
		if (cJSON_IsString(ip) && inet_pton(AF_INET, ip->valuestring, &address) == 1)
			table->entries[i].ip = ntohl(address.s_addr);
		i++;
	}
	cJSON_Delete(root);
	/* A file edited by hand may hold anything: an address outside the
	 * range, or one twice, is given anew. */
	for (i = 0; i < table->count; i++) {
		uint32_t ip = table->entries[i].ip;
		bool outside = (ip >> (32 - SERVICES_NET_BITS)) !=
				       (SERVICES_NET >> (32 - SERVICES_NET_BITS)) ||
			       (ip & 0xffffu) < SERVICES_FIRST_HOST;
		for (size_t j = 0; j < i && !outside; j++)
			outside = table->entries[j].ip == ip;
		if (outside)
			table->entries[i].ip = 0;
	}
	services_assign_ips(table, NULL);
}
