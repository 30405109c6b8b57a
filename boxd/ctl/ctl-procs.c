/* ctl-procs.c: boxctl procs ls | show | wait | stop | log | rm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "xalloc.h"

static const char *text_of(const cJSON *object, const char *name)
{
	const cJSON *item = cJSON_GetObjectItem(object, name);
	return cJSON_IsString(item) ? item->valuestring : "";
}

static void print_proc(const cJSON *proc)
{
	const cJSON *code = cJSON_GetObjectItem(proc, "exitCode");
	char status[48] = "running";
	if (!strcmp(text_of(proc, "state"), "exited"))
		snprintf(status, sizeof status, "exit %d%s%s",
			 cJSON_IsNumber(code) ? (int)code->valuedouble : -1,
			 *text_of(proc, "signal") ? " " : "", text_of(proc, "signal"));
	const char *cmd = text_of(proc, "cmd");
	printf("%-20s %-8.0f %-16s %.*s\n", text_of(proc, "bgId"),
	       cJSON_GetObjectItem(proc, "pid")->valuedouble, status, (int)strcspn(cmd, "\n"), cmd);
}

static int show_answer(struct ctl *ctl, int status, cJSON *answer)
{
	if (status != CTL_OK)
		return status;
	if (!ctl_print_json(ctl, answer)) {
		if (cJSON_GetObjectItem(answer, "procs")) {
			printf("%-20s %-8s %-16s %s\n", "ID", "PID", "STATE", "COMMAND");
			const cJSON *proc;
			cJSON_ArrayForEach(proc, cJSON_GetObjectItem(answer, "procs"))
				print_proc(proc);
		} else {
			print_proc(answer);
			if (cJSON_IsTrue(cJSON_GetObjectItem(answer, "waitTimedOut")))
				printf("(still running when the wait ran out)\n");
			if (*text_of(answer, "message"))
				printf("%s\n", text_of(answer, "message"));
			printf("log: %s\n", text_of(answer, "logPath"));
		}
	}
	cJSON_Delete(answer);
	return CTL_OK;
}

static char *proc_path(const char *id, const char *suffix)
{
	char *encoded = ctl_url_encode(id);
	char *path = xasprintf("/v1/procs/%s%s", encoded, suffix);
	free(encoded);
	return path;
}

static int call_and_show(struct ctl *ctl, const char *method, const char *id, const char *suffix,
			 cJSON *body)
{
	char *path = proc_path(id, suffix);
	cJSON *answer = NULL;
	int status = ctl_call(ctl, method, path, body, &answer);
	free(path);
	cJSON_Delete(body);
	return show_answer(ctl, status, answer);
}

/* Prints the log from `offset`; returns the next offset, or -1 on an error. */
static long long print_log(struct ctl *ctl, const char *id, const char *query, bool *running)
{
	char *suffix = xasprintf("/log?%s", query);
	char *path = proc_path(id, suffix);
	free(suffix);
	struct client_response response = {0};
	int status = ctl_call_raw(ctl, "GET", path, NULL, NULL, 0, NULL, &response);
	free(path);
	if (status != CTL_OK) {
		client_response_free(&response);
		return -1;
	}
	fwrite(response.body, 1, response.body_length, stdout);
	fflush(stdout);
	const char *next = client_response_header(&response, "X-Log-Next-Offset");
	const char *state = client_response_header(&response, "X-Proc-State");
	*running = state && !strcmp(state, "running");
	long long offset = next ? atoll(next) : -1;
	if (response.body_length == 0 && !*running)
		offset = -2; /* the end, and nothing more will come */
	client_response_free(&response);
	return offset;
}

static int run_log(struct ctl *ctl, int argc, char **argv)
{
	const char *id = NULL;
	long tail = -1;
	bool follow = false;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--follow") || !strcmp(argv[i], "-f"))
			follow = true;
		else if (!strcmp(argv[i], "--tail") && i + 1 < argc)
			tail = atol(argv[++i]);
		else if (argv[i][0] != '-' && !id)
			id = argv[i];
		else
			return ctl_usage_error("procs log",
					       "usage: boxctl procs log ID [--tail N] [--follow]");
	}
	if (!id)
		return ctl_usage_error("procs log", "give the proc's id");
	bool running;
	char query[64];
	if (tail >= 0)
		snprintf(query, sizeof query, "tail=%ld", tail);
	else
		snprintf(query, sizeof query, "offset=0");
	long long offset = print_log(ctl, id, query, &running);
	/* Without --follow, read to the current end; with it, until it exits. */
	while (offset >= 0) {
		snprintf(query, sizeof query, "offset=%lld", offset);
		long long next = print_log(ctl, id, query, &running);
		if (next == -1)
			return CTL_API_ERROR;
		if (next == offset || next == -2) {
			if (!follow || !running)
				break;
			usleep(300 * 1000);
		}
		offset = next == -2 ? offset : next;
	}
	return offset == -1 ? CTL_API_ERROR : CTL_OK;
}

static int run_procs(struct ctl *ctl, int argc, char **argv)
{
	const char *verb = argc > 1 ? argv[1] : "ls";
	const char *id = argc > 2 ? argv[2] : NULL;
	if (!strcmp(verb, "ls")) {
		cJSON *answer = NULL;
		int status = ctl_call(ctl, "GET", "/v1/procs", NULL, &answer);
		return show_answer(ctl, status, answer);
	}
	if (!id)
		return ctl_usage_error("procs", "`procs %s` needs the proc's id", verb);
	if (!strcmp(verb, "show"))
		return call_and_show(ctl, "GET", id, "", NULL);
	if (!strcmp(verb, "log"))
		return run_log(ctl, argc, argv);
	if (!strcmp(verb, "rm")) {
		if (argc != 3)
			return ctl_usage_error("procs", "usage: boxctl procs rm ID");
		char *path = proc_path(id, "");
		cJSON *answer = NULL;
		int status = ctl_call(ctl, "DELETE", path, NULL, &answer);
		free(path);
		if (status == CTL_OK && !(answer && ctl_print_json(ctl, answer)))
			printf("forgot %s (its log stays)\n", id);
		cJSON_Delete(answer);
		return status;
	}
	cJSON *body = cJSON_CreateObject();
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			cJSON_AddNumberToObject(body, "timeoutSec", atof(argv[++i]));
		else if (!strcmp(argv[i], "--signal") && i + 1 < argc)
			cJSON_AddStringToObject(body, "signal", argv[++i]);
		else if (!strcmp(argv[i], "--grace") && i + 1 < argc)
			cJSON_AddNumberToObject(body, "graceSec", atof(argv[++i]));
		else {
			cJSON_Delete(body);
			return ctl_usage_error("procs", "unexpected `%s`", argv[i]);
		}
	}
	if (!strcmp(verb, "wait") || !strcmp(verb, "stop"))
		return call_and_show(ctl, "POST", id, !strcmp(verb, "wait") ? "/wait" : "/stop",
				     body);
	cJSON_Delete(body);
	return ctl_usage_error("procs", "unknown `%s`: ls, show, wait, stop, log or rm", verb);
}

const struct ctl_command ctl_procs_commands[] = {
	{"procs",
	 "  procs [ls]                  background commands\n"
	 "  procs show ID               one of them\n"
	 "  procs wait ID [--timeout S]\n"
	 "                              until it ends, or the wait runs out\n"
	 "  procs stop ID [--signal S] [--grace S]\n"
	 "                              signal its whole tree, SIGKILL after the grace\n"
	 "  procs log ID [--tail N] [--follow]\n"
	 "                              its log (masked)\n"
	 "  procs rm ID                 forget an ended one (its log file stays)",
	 run_procs},
	{0},
};
