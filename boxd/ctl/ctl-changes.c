/* ctl-changes.c: boxctl changes [PATH] [--since C] [--follow] [--all]
 * (API.md, "Changes"; docs/changes.md).
 *
 * Prints one line per change, `kind type path` (`<- from` for moves), and
 * the cursor to pass as --since next time on the last line (`cursor C`), or
 * `all C` when everything should be read again. --follow prints each change
 * as it happens until interrupted; --json prints the API's JSON (NDJSON
 * lines with --follow). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "xalloc.h"

struct follow_state {
	bool json;
	char *line; /* a line not yet ended */
	size_t length;
};

static void print_change(const cJSON *change)
{
	const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(change, "kind"));
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(change, "type"));
	const char *path = cJSON_GetStringValue(cJSON_GetObjectItem(change, "path"));
	const char *from = cJSON_GetStringValue(cJSON_GetObjectItem(change, "from"));
	if (!kind || !path)
		return;
	printf("%-8s %-4s %s", kind, type ? type : "", path);
	if (from)
		printf(" <- %s", from);
	printf("\n");
}

/* A line of the follow's NDJSON: a change, a cursor, or an alive tick. */
static void print_line(const struct follow_state *state, const char *text)
{
	if (state->json) {
		printf("%s\n", text);
		fflush(stdout);
		return;
	}
	cJSON *line = cJSON_Parse(text);
	if (!line)
		return;
	const char *cursor = cJSON_GetStringValue(cJSON_GetObjectItem(line, "cursor"));
	if (cJSON_GetObjectItem(line, "path"))
		print_change(line);
	else if (cursor)
		printf("%s %s\n", cJSON_IsTrue(cJSON_GetObjectItem(line, "all")) ? "all" : "cursor",
		       cursor);
	cJSON_Delete(line);
	fflush(stdout);
}

static bool on_data(void *arg, const char *data, size_t length)
{
	struct follow_state *state = arg;
	state->line = xrealloc(state->line, state->length + length + 1);
	memcpy(state->line + state->length, data, length);
	state->length += length;
	state->line[state->length] = '\0';
	char *start = state->line, *newline;
	while ((newline = memchr(start, '\n', state->length - (size_t)(start - state->line)))) {
		*newline = '\0';
		print_line(state, start);
		start = newline + 1;
	}
	state->length -= (size_t)(start - state->line);
	memmove(state->line, start, state->length);
	return true;
}

static int follow(struct ctl *ctl, const char *target)
{
	struct client *client = ctl_client(ctl);
	if (!client)
		return CTL_API_ERROR;
	struct follow_state state = {.json = ctl->json};
	struct client_response response = {0};
	char error[256];
	bool ok = client_request_stream(client, "GET", target, NULL, NULL, 0, NULL, on_data, &state,
					&response, error, sizeof error);
	int status = CTL_OK;
	if (!ok) {
		fprintf(stderr, "boxctl: %s\n", error);
		status = CTL_API_ERROR;
	} else if (response.status < 200 || response.status > 299) {
		/* An error answer is one JSON object without a newline. */
		cJSON *body = state.length ? cJSON_Parse(state.line) : NULL;
		const char *message = cJSON_GetStringValue(
			cJSON_GetObjectItem(cJSON_GetObjectItem(body, "error"), "message"));
		fprintf(stderr, "boxctl: %s\n", message ? message : "boxd answered an error");
		cJSON_Delete(body);
		status = CTL_API_ERROR;
	}
	free(state.line);
	client_response_free(&response);
	return status;
}

static int print_answer(struct ctl *ctl, const char *target)
{
	cJSON *answer = NULL;
	int status = ctl_call(ctl, "GET", target, NULL, &answer);
	if (status != CTL_OK || ctl_print_json(ctl, answer)) {
		cJSON_Delete(answer);
		return status;
	}
	const cJSON *change;
	cJSON_ArrayForEach(change, cJSON_GetObjectItem(answer, "changes")) print_change(change);
	const char *cursor = cJSON_GetStringValue(cJSON_GetObjectItem(answer, "cursor"));
	printf("%s %s\n", cJSON_IsTrue(cJSON_GetObjectItem(answer, "all")) ? "all" : "cursor",
	       cursor ? cursor : "");
	cJSON_Delete(answer);
	return CTL_OK;
}

static void append(char **target, const char *name, const char *value)
{
	char *encoded = ctl_url_encode(value);
	size_t length = strlen(*target) + strlen(name) + strlen(encoded) + 3;
	char *longer = xmalloc(length);
	snprintf(longer, length, "%s%s%s=%s", *target, strchr(*target, '?') ? "&" : "?", name,
		 encoded);
	free(encoded);
	free(*target);
	*target = longer;
}

static int run_changes(struct ctl *ctl, int argc, char **argv)
{
	const char *path = NULL, *since = NULL;
	bool following = false, all = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--since") && i + 1 < argc)
			since = argv[++i];
		else if (!strcmp(argv[i], "--follow") || !strcmp(argv[i], "-f"))
			following = true;
		else if (!strcmp(argv[i], "--all"))
			all = true;
		else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else
			return ctl_usage_error("changes",
					       "usage: boxctl changes [PATH] [--since CURSOR] "
					       "[--follow] [--all]");
	}
	char *target = xstrdup("/v1/files/changes");
	if (path)
		append(&target, "path", path);
	if (since)
		append(&target, "since", since);
	if (following)
		append(&target, "follow", "1");
	if (all)
		append(&target, "all", "1");
	int status = following ? follow(ctl, target) : print_answer(ctl, target);
	free(target);
	return status;
}

const struct ctl_command ctl_changes_commands[] = {
	{"changes",
	 "  changes [PATH] [--since C] [--follow] [--all]\n"
	 "                              what changed under PATH since the cursor C (the\n"
	 "                              last line printed is the next cursor); --follow\n"
	 "                              prints changes as they happen; --all includes\n"
	 "                              .git internals and .sbx",
	 run_changes},
	{0},
};
