/* ctl-freeze.c: boxctl freeze [--reclaim] [--commands] | thaw: by hand what
 * the control plane does before a snapshot, to see what a freeze frees and
 * stops (docs/freeze.md). */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

static double number(const cJSON *object, const char *name, const char *inner)
{
	const cJSON *item = cJSON_GetObjectItem(object, name);
	if (inner)
		item = cJSON_GetObjectItem(item, inner);
	double value = cJSON_GetNumberValue(item);
	return value == value ? value : 0;
}

static void print_frozen(const cJSON *answer)
{
	const double mib = 1024.0 * 1024;
	const cJSON *memory = cJSON_GetObjectItem(answer, "memory");
	const cJSON *before = cJSON_GetObjectItem(memory, "before");
	const cJSON *after = cJSON_GetObjectItem(memory, "after");
	const cJSON *commands = cJSON_GetObjectItem(answer, "commands");
	printf("frozen in %.0f ms: %.0f commands, %.0f containers (%.0f frozen before, left so)\n",
	       number(answer, "tookMs", NULL), number(commands, "frozen", NULL),
	       number(commands, "containers", NULL), number(commands, "frozenBefore", NULL));
	printf("memory used %.0f -> %.0f MiB, cache %.0f -> %.0f MiB\n",
	       number(before, "usedBytes", NULL) / mib, number(after, "usedBytes", NULL) / mib,
	       number(before, "cacheBytes", NULL) / mib, number(after, "cacheBytes", NULL) / mib);
	const char *error = cJSON_GetStringValue(
		cJSON_GetObjectItem(cJSON_GetObjectItem(answer, "flush"), "error"));
	if (error)
		printf("reclaim: %s\n", error);
	printf("every call but health, init and thaw answers 409 until `boxctl thaw`\n");
}

static int run_freeze(struct ctl *ctl, int argc, char **argv)
{
	cJSON *body = cJSON_CreateObject();
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--reclaim") == 0) {
			cJSON_AddTrueToObject(body, "reclaim");
		} else if (strcmp(argv[i], "--commands") == 0) {
			cJSON_AddTrueToObject(body, "freezeCommands");
		} else {
			cJSON_Delete(body);
			return ctl_usage_error("freeze",
					       "unknown argument %s (usage: boxctl freeze "
					       "[--reclaim] [--commands])",
					       argv[i]);
		}
	}
	cJSON *answer;
	int status = ctl_call(ctl, "POST", "/v1/freeze", body, &answer);
	cJSON_Delete(body);
	if (status == CTL_OK && !ctl_print_json(ctl, answer))
		print_frozen(answer);
	cJSON_Delete(answer);
	return status;
}

static int run_thaw(struct ctl *ctl, int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		return ctl_usage_error("thaw", "takes no arguments");
	cJSON *answer;
	int status = ctl_call(ctl, "POST", "/v1/thaw", NULL, &answer);
	if (status == CTL_OK && !ctl_print_json(ctl, answer)) {
		if (cJSON_IsTrue(cJSON_GetObjectItem(answer, "thawed")))
			printf("thawed after %.1f s: %.0f cgroups\n",
			       number(answer, "frozenMs", NULL) / 1000,
			       number(answer, "commands", "thawed"));
		else
			printf("nothing was frozen\n");
	}
	cJSON_Delete(answer);
	return status;
}

const struct ctl_command ctl_freeze_commands[] = {
	{"freeze",
	 "  freeze [--reclaim] [--commands]\n"
	 "                              ready the box for a snapshot (calls answer\n"
	 "                              409 until thaw)",
	 run_freeze},
	{"thaw", "  thaw                        undo a freeze", run_thaw},
	{0},
};
