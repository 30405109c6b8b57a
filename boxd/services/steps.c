#include "steps.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "redact.h"
#include "xalloc.h"

/* Summaries are cut here: a step is a line to glance at, not a transcript. */
#define SUMMARY_MAX 400

struct step {
	int64_t at;
	char kind[16];
	char *summary;
};

static struct step ring[STEPS_KEPT];
static unsigned next_slot, stored;

/* Cuts at a UTF-8 character boundary so a summary stays valid text. */
static void cut_utf8(char *text, size_t max)
{
	size_t length = strlen(text);
	if (length <= max)
		return;
	size_t end = max - 3;
	while (end > 0 && ((unsigned char)text[end] & 0xC0) == 0x80)
		end--;
	memcpy(text + end, "...", 4);
}

void steps_add(const char *kind, const char *fmt, ...)
{
	char *text;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	if (!text)
		return;
	char *masked = redact_text(text);
	free(text);
	cut_utf8(masked, SUMMARY_MAX);

	struct step *step = &ring[next_slot];
	free(step->summary);
	step->at = clock_now_ms();
	snprintf(step->kind, sizeof step->kind, "%s", kind);
	step->summary = masked;
	next_slot = (next_slot + 1) % STEPS_KEPT;
	if (stored < STEPS_KEPT)
		stored++;
}

cJSON *steps_to_json(void)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *list = cJSON_AddArrayToObject(root, "steps");
	unsigned first = (next_slot + STEPS_KEPT - stored) % STEPS_KEPT;
	for (unsigned i = 0; i < stored; i++) {
		const struct step *step = &ring[(first + i) % STEPS_KEPT];
		cJSON *item = cJSON_CreateObject();
		cJSON_AddNumberToObject(item, "at", (double)step->at);
		cJSON_AddStringToObject(item, "kind", step->kind);
		cJSON_AddStringToObject(item, "summary", step->summary);
		cJSON_AddItemToArray(list, item);
	}
	return root;
}
