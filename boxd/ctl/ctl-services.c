/* ctl-services.c: boxctl services [ls] | set | rm | wait. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

#define SERVICES_USAGE                                                                      \
	"usage: boxctl services [ls] | services set NAME PORT [TARGET] [--external ADDR] |" \
	" services rm NAME | services wait NAME [--timeout S]"

static void print_entry(const cJSON *entry)
{
	const char *mode = cJSON_GetStringValue(cJSON_GetObjectItem(entry, "mode"));
	const char *address = cJSON_GetStringValue(cJSON_GetObjectItem(entry, "address"));
	const char *listener = cJSON_GetStringValue(cJSON_GetObjectItem(entry, "listener"));
	char target[160];
	if (mode && !strcmp(mode, "external"))
		snprintf(target, sizeof target, "-> %s", address ? address : "?");
	else
		snprintf(target, sizeof target, "-> :%d",
			 (int)cJSON_GetNumberValue(cJSON_GetObjectItem(entry, "targetPort")));
	printf("%-20s %-15s %5d %-9s %-24s %s\n",
	       cJSON_GetStringValue(cJSON_GetObjectItem(entry, "name")),
	       cJSON_GetStringValue(cJSON_GetObjectItem(entry, "ip")),
	       (int)cJSON_GetNumberValue(cJSON_GetObjectItem(entry, "port")), mode ? mode : "?",
	       target,
	       cJSON_IsTrue(cJSON_GetObjectItem(entry, "listening"))
		       ? (listener ? listener : "listening")
		       : "not listening");
}

static void print_table(const cJSON *answer)
{
	const cJSON *list = cJSON_GetObjectItem(answer, "services");
	if (!cJSON_GetArraySize(list))
		printf("no services\n");
	else
		printf("%-20s %-15s %5s %-9s %-24s %s\n", "NAME", "IP", "PORT", "MODE", "TARGET",
		       "LISTENER");
	const cJSON *entry;
	cJSON_ArrayForEach(entry, list) print_entry(entry);
	const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(answer, "notWired"));
	if (why)
		printf("not wired: %s\n", why);
}

static int call_and_print(struct ctl *ctl, const char *method, const char *path, cJSON *body,
			  void (*print)(const cJSON *answer))
{
	cJSON *answer;
	int status = ctl_call(ctl, method, path, body, &answer);
	cJSON_Delete(body);
	if (status == CTL_OK && !ctl_print_json(ctl, answer))
		print(answer);
	cJSON_Delete(answer);
	return status;
}

static char *entry_path(const char *name, const char *suffix)
{
	char *encoded = ctl_url_encode(name);
	size_t size = strlen(encoded) + strlen(suffix) + 16;
	char *path = malloc(size);
	snprintf(path, size, "/v1/services/%s%s", encoded, suffix);
	free(encoded);
	return path;
}

static bool parse_port(const char *text, int *port)
{
	char *end;
	long value = strtol(text, &end, 10);
	*port = (int)value;
	return *text && !*end && value >= 1 && value <= 65535;
}

static int run_set(struct ctl *ctl, int argc, char **argv)
{
	const char *positional[3] = {0}, *external = NULL;
	int count = 0;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--external") && i + 1 < argc)
			external = argv[++i];
		else if (!strncmp(argv[i], "--external=", 11))
			external = argv[i] + 11;
		else if (count < 3 && argv[i][0] != '-')
			positional[count++] = argv[i];
		else
			return ctl_usage_error("services", "unexpected `%s` (%s)", argv[i],
					       SERVICES_USAGE);
	}
	int port, target;
	if (count < 2 || !parse_port(positional[1], &port) ||
	    (positional[2] && !parse_port(positional[2], &target)))
		return ctl_usage_error("services", "set needs NAME and PORT (1 to 65535) (%s)",
				       SERVICES_USAGE);
	cJSON *body = cJSON_CreateObject();
	cJSON_AddNumberToObject(body, "port", port);
	if (positional[2])
		cJSON_AddNumberToObject(body, "targetPort", target);
	cJSON_AddStringToObject(body, "mode", external ? "external" : "box");
	if (external)
		cJSON_AddStringToObject(body, "address", external);
	char *path = entry_path(positional[0], "");
	int status = call_and_print(ctl, "PUT", path, body, print_table);
	free(path);
	return status;
}

static int run_rm(struct ctl *ctl, int argc, char **argv)
{
	if (argc != 3)
		return ctl_usage_error("services", "rm takes one NAME (%s)", SERVICES_USAGE);
	char *path = entry_path(argv[2], "");
	int status = call_and_print(ctl, "DELETE", path, NULL, print_table);
	free(path);
	return status;
}

static void print_waited(const cJSON *entry)
{
	print_entry(entry);
	if (cJSON_IsTrue(cJSON_GetObjectItem(entry, "waitTimedOut")))
		printf("timed out before it listened\n");
}

static int run_wait(struct ctl *ctl, int argc, char **argv)
{
	if (argc < 3)
		return ctl_usage_error("services", "wait takes a NAME (%s)", SERVICES_USAGE);
	cJSON *body = cJSON_CreateObject();
	for (int i = 3; i < argc; i++) {
		char *end;
		double seconds;
		if (!strcmp(argv[i], "--timeout") && i + 1 < argc &&
		    (seconds = strtod(argv[i + 1], &end)) >= 0 && !*end) {
			cJSON_AddNumberToObject(body, "timeoutSec", seconds);
			i++;
		} else {
			cJSON_Delete(body);
			return ctl_usage_error("services", "unexpected `%s` (%s)", argv[i],
					       SERVICES_USAGE);
		}
	}
	char *path = entry_path(argv[2], "/wait");
	int status = call_and_print(ctl, "POST", path, body, print_waited);
	free(path);
	return status;
}

static int run_services(struct ctl *ctl, int argc, char **argv)
{
	if (argc == 1 || (argc == 2 && !strcmp(argv[1], "ls")))
		return call_and_print(ctl, "GET", "/v1/services", NULL, print_table);
	if (!strcmp(argv[1], "set"))
		return run_set(ctl, argc, argv);
	if (!strcmp(argv[1], "rm"))
		return run_rm(ctl, argc, argv);
	if (!strcmp(argv[1], "wait"))
		return run_wait(ctl, argc, argv);
	return ctl_usage_error("services", "unknown `%s` (%s)", argv[1], SERVICES_USAGE);
}

const struct ctl_command ctl_services_commands[] = {
	{"services",
	 "  services [ls]               the services table: names, ports, listeners\n"
	 "  services set NAME PORT [TARGET] [--external ADDR]\n"
	 "                              add or switch a service (box: TARGET port\n"
	 "                              of the box; external: ADDR is IP:PORT or\n"
	 "                              vsock:CID:PORT)\n"
	 "  services rm NAME            remove one\n"
	 "  services wait NAME [--timeout S]  until it listens",
	 run_services},
	{0},
};
