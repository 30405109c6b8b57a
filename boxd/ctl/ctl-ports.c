/* ctl-ports.c: boxctl ports, every listening TCP socket in the box. */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

static const char *text_or(const cJSON *object, const char *name, const char *otherwise)
{
	const cJSON *item = cJSON_GetObjectItem(object, name);
	return cJSON_IsString(item) ? item->valuestring : otherwise;
}

/* " (container web, host port 8080)": by name, else by the id's first 12
 * digits, as `docker ps` shows it. */
static void print_container(const cJSON *container)
{
	if (!cJSON_IsObject(container))
		return;
	const char *name = text_or(container, "name", NULL);
	const cJSON *host = cJSON_GetObjectItem(container, "hostPort");
	printf(" (container %.*s", name ? (int)strlen(name) : 12,
	       name ? name : text_or(container, "id", "?"));
	if (cJSON_IsNumber(host))
		printf(", host port %.0f", host->valuedouble);
	printf(")");
}

static void print_port(const cJSON *port)
{
	const cJSON *pid = cJSON_GetObjectItem(port, "pid");
	char pid_text[16] = "-";
	if (cJSON_IsNumber(pid))
		snprintf(pid_text, sizeof pid_text, "%.0f", pid->valuedouble);
	const char *command = text_or(port, "command", "-");
	printf("%-6.0f %-15s %-8s %-20s %.*s",
	       cJSON_GetNumberValue(cJSON_GetObjectItem(port, "port")),
	       text_or(port, "address", "?"), pid_text, text_or(port, "execId", "-"),
	       (int)strcspn(command, "\n"), command);
	print_container(cJSON_GetObjectItem(port, "container"));
	printf("\n");
}

static int run_ports(struct ctl *ctl, int argc, char **argv)
{
	if (argc > 1)
		return ctl_usage_error("ports", "unexpected `%s` (usage: boxctl ports [--json])",
				       argv[1]);
	cJSON *answer = NULL;
	int status = ctl_call(ctl, "GET", "/v1/ports", NULL, &answer);
	if (status != CTL_OK)
		return status;
	if (!ctl_print_json(ctl, answer)) {
		printf("%-6s %-15s %-8s %-20s %s\n", "PORT", "ADDRESS", "PID", "EXECID", "COMMAND");
		const cJSON *port;
		cJSON_ArrayForEach(port, cJSON_GetObjectItem(answer, "ports")) print_port(port);
	}
	cJSON_Delete(answer);
	return CTL_OK;
}

const struct ctl_command ctl_ports_commands[] = {
	{"ports",
	 "  ports                       listening TCP sockets: process, command,\n"
	 "                              exec id (boxd's commands), container",
	 run_ports},
	{0},
};
