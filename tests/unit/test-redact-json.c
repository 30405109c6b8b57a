/* test-redact-json.c: every string of a JSON tree, values and member names,
 * at any depth, comes out masked; numbers, booleans and structure stay. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mask.h"
#include "redact-json.h"
#include "redact.h"

static struct mask_set *set;

static char *filter(const char *text)
{
	return mask_text(set, text);
}

static char *redacted(const char *json)
{
	cJSON *tree = cJSON_Parse(json);
	redact_json(tree);
	char *text = cJSON_PrintUnformatted(tree);
	cJSON_Delete(tree);
	return text;
}

static void expect(const char *json, const char *want)
{
	char *got = redacted(json);
	CHECK(strcmp(got, want) == 0);
	if (strcmp(got, want) != 0)
		fprintf(stderr, "  %s\n  got  %s\n  want %s\n", json, got, want);
	free(got);
}

int main(void)
{
	const char *values[] = {"tok-4f9a2c-SECRET-value"};
	set = mask_set_new(values, NULL, 1);
	/* No filter yet: unchanged. */
	expect("{\"note\":\"tok-4f9a2c-SECRET-value\"}", "{\"note\":\"tok-4f9a2c-SECRET-value\"}");
	redact_set_filter(filter);
	expect("{\"note\":\"deploy tok-4f9a2c-SECRET-value now\",\"pid\":12,\"ok\":true}",
	       "{\"note\":\"deploy **** now\",\"pid\":12,\"ok\":true}");
	expect("{\"procs\":[{\"cwd\":\"/work/tok-4f9a2c-SECRET-value\",\"note\":null},"
	       "{\"x\":[\"a\",\"746f6b2d3466396132632d5345435245542d76616c7565\"]}]}",
	       "{\"procs\":[{\"cwd\":\"/work/****\",\"note\":null},{\"x\":[\"a\",\"****\"]}]}");
	/* A member name is masked too. */
	expect("{\"tok-4f9a2c-SECRET-value\":1}", "{\"****\":1}");
	/* A string that is only the value, and one with nothing in it. */
	expect("[\"tok-4f9a2c-SECRET-value\",\"\",\"plain\"]", "[\"****\",\"\",\"plain\"]");
	redact_json(NULL);
	redact_set_filter(NULL);
	mask_set_unref(set);
	return check_done("redact-json");
}
