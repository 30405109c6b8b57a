/* ctl-steps.c: boxctl steps, lock [status], unlock. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ctl.h"

static void print_step(const cJSON *step)
{
	const cJSON *at = cJSON_GetObjectItem(step, "at");
	const cJSON *kind = cJSON_GetObjectItem(step, "kind");
	const cJSON *summary = cJSON_GetObjectItem(step, "summary");
	time_t seconds = cJSON_IsNumber(at) ? (time_t)(at->valuedouble / 1000) : 0;
	struct tm local;
	char when[32];
	strftime(when, sizeof when, "%H:%M:%S", localtime_r(&seconds, &local));
	printf("%s  %-6s  %s\n", when, cJSON_IsString(kind) ? kind->valuestring : "?",
	       cJSON_IsString(summary) ? summary->valuestring : "");
}

static int run_steps(struct ctl *ctl, int argc, char **argv)
{
	if (argc > 1)
		return ctl_usage_error("steps", "takes no arguments");
	cJSON *answer;
	int status = ctl_call(ctl, "GET", "/v1/steps", NULL, &answer);
	if (status != CTL_OK)
		return status;
	if (!ctl_print_json(ctl, answer)) {
		const cJSON *step;
		cJSON_ArrayForEach(step, cJSON_GetObjectItem(answer, "steps")) print_step(step);
	}
	cJSON_Delete(answer);
	return CTL_OK;
}

/* One line a person reads: the state, since when, the note, the token. */
static void print_lock(const cJSON *lock)
{
	if (!cJSON_IsTrue(cJSON_GetObjectItem(lock, "locked"))) {
		printf("unlocked\n");
		return;
	}
	const cJSON *since = cJSON_GetObjectItem(lock, "since");
	const char *note = cJSON_GetStringValue(cJSON_GetObjectItem(lock, "note"));
	const char *token = cJSON_GetStringValue(cJSON_GetObjectItem(lock, "token"));
	char when[32] = "?";
	if (cJSON_IsNumber(since)) {
		time_t seconds = (time_t)(since->valuedouble / 1000);
		struct tm local;
		strftime(when, sizeof when, "%H:%M:%S", localtime_r(&seconds, &local));
	}
	printf("locked since %s%s%s\n", when, note && *note ? ": " : "", note && *note ? note : "");
	if (token && *token)
		printf("takeover token: %s (input sent with X-Takeover: TOKEN goes through)\n",
		       token);
}

static int set_lock(struct ctl *ctl, bool locked, const char *note)
{
	cJSON *body = cJSON_CreateObject();
	cJSON_AddBoolToObject(body, "locked", locked);
	if (note)
		cJSON_AddStringToObject(body, "note", note);
	cJSON *answer;
	int status = ctl_call(ctl, "PUT", "/v1/lock", body, &answer);
	cJSON_Delete(body);
	if (status != CTL_OK)
		return status;
	if (!ctl_print_json(ctl, answer)) {
		print_lock(answer);
		if (locked)
			printf("commands, input, recording and uploads wait until `boxctl "
			       "unlock`\n");
	}
	cJSON_Delete(answer);
	return CTL_OK;
}

static int run_lock(struct ctl *ctl, int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "status") == 0) {
		cJSON *answer;
		int status = ctl_call(ctl, "GET", "/v1/lock", NULL, &answer);
		if (status == CTL_OK && !ctl_print_json(ctl, answer))
			print_lock(answer);
		cJSON_Delete(answer);
		return status;
	}
	const char *note = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--note") == 0 && i + 1 < argc)
			note = argv[++i];
		else if (strncmp(argv[i], "--note=", 7) == 0)
			note = argv[i] + 7;
		else
			return ctl_usage_error(
				"lock",
				"unexpected `%s` (usage: boxctl lock [--note TEXT] | lock status)",
				argv[i]);
	}
	return set_lock(ctl, true, note);
}

static int run_unlock(struct ctl *ctl, int argc, char **argv)
{
	if (argc > 1)
		return ctl_usage_error("unlock", "takes no arguments");
	return set_lock(ctl, false, NULL);
}

const struct ctl_command ctl_steps_commands[] = {
	{"steps", "  steps                       the last 30 things boxd did", run_steps},
	{"lock",
	 "  lock [--note TEXT]          a person takes the screen: changes wait\n"
	 "  lock status                 whether it is locked, since when, by whom",
	 run_lock},
	{"unlock", "  unlock                      hand the screen back", run_unlock},
	{0},
};
