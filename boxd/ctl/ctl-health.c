/* ctl-health.c: boxctl health. */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

static double number(const cJSON *object, const char *path1, const char *path2)
{
	const cJSON *item = cJSON_GetObjectItem(object, path1);
	if (path2)
		item = item ? cJSON_GetObjectItem(item, path2) : NULL;
	double value = cJSON_GetNumberValue(item); /* NaN when not a number */
	return value == value ? value : -1;
}

static bool flag(const cJSON *object, const char *path1, const char *path2)
{
	const cJSON *item = cJSON_GetObjectItem(object, path1);
	if (path2)
		item = item ? cJSON_GetObjectItem(item, path2) : NULL;
	return cJSON_IsTrue(item);
}

static const char *text(const cJSON *object, const char *name)
{
	const cJSON *item = cJSON_GetObjectItem(object, name);
	return cJSON_IsString(item) ? item->valuestring : "?";
}

/* Busy and why, or idle since when; and a freeze in force. */
static void print_activity(const cJSON *health)
{
	const cJSON *activity = cJSON_GetObjectItem(health, "activity");
	char reasons[256] = "";
	const cJSON *reason;
	cJSON_ArrayForEach(reason, cJSON_GetObjectItem(activity, "reasons"))
	{
		size_t used = strlen(reasons);
		snprintf(reasons + used, sizeof reasons - used, "%s%s", used ? ", " : "",
			 cJSON_GetStringValue(reason) ? reason->valuestring : "?");
	}
	double now = number(health, "startedAt", NULL) + number(health, "uptimeMs", NULL);
	if (flag(health, "activity", "busy"))
		printf("activity  busy: %s\n", reasons);
	else
		printf("activity  idle for %.0f s\n",
		       (now - number(health, "activity", "idleSince")) / 1000);
	if (flag(health, "freeze", "frozen"))
		printf("freeze    FROZEN for %.0f s: calls answer 409 until `boxctl thaw`\n",
		       (now - number(health, "freeze", "since")) / 1000);
}

static void print_health(const cJSON *health)
{
	const cJSON *display = cJSON_GetObjectItem(health, "display");
	const double gib = 1024.0 * 1024 * 1024;
	printf("boxd %s, up %.1f s\n", text(health, "version"),
	       number(health, "uptimeMs", NULL) / 1000);
	if (flag(health, "display", "up") && number(health, "display", "width") > 0)
		printf("display   %s up, %.0fx%.0f\n", text(display, "name"),
		       number(health, "display", "width"), number(health, "display", "height"));
	else
		printf("display   %s %s\n", text(display, "name"),
		       flag(health, "display", "up") ? "up" : "down");
	printf("docker    %s\n", flag(health, "docker", "up") ? "up" : "down");
	const cJSON *load = cJSON_GetObjectItem(health, "load");
	if (cJSON_GetArraySize(load) == 3)
		printf("load      %.2f %.2f %.2f\n", cJSON_GetArrayItem(load, 0)->valuedouble,
		       cJSON_GetArrayItem(load, 1)->valuedouble,
		       cJSON_GetArrayItem(load, 2)->valuedouble);
	printf("memory    %.1f GiB available of %.1f GiB\n",
	       number(health, "memory", "availableBytes") / gib,
	       number(health, "memory", "totalBytes") / gib);
	printf("disk      %.1f GiB free of %.1f GiB (%s)\n",
	       number(health, "disk", "freeBytes") / gib,
	       number(health, "disk", "totalBytes") / gib,
	       text(cJSON_GetObjectItem(health, "disk"), "path"));
	printf("procs     %.0f running\n", number(health, "procs", "running"));
	printf("recording %s\n", flag(health, "recording", NULL) ? "yes" : "no");
	printf("locked    %s\n",
	       flag(health, "locked", NULL) ? "yes (a person has the screen)" : "no");
	printf("secrets   %.0f\n", number(health, "secrets", "count"));
	print_activity(health);
}

static int run_health(struct ctl *ctl, int argc, char **argv)
{
	if (argc > 1)
		return ctl_usage_error("health", "takes no arguments");
	cJSON *health;
	int status = ctl_call(ctl, "GET", "/v1/health", NULL, &health);
	if (status != CTL_OK)
		return status;
	if (!ctl_print_json(ctl, health))
		print_health(health);
	cJSON_Delete(health);
	return CTL_OK;
}

const struct ctl_command ctl_health_commands[] = {
	{"health", "  health                      how the box is doing", run_health},
	{0},
};
