#include "redact-json.h"

#include <stdlib.h>
#include <string.h>

#include "mask.h"
#include "redact.h"

/* A masked text is never longer than the text ("****" stands for 8 bytes or
 * more), so it is written over the original. A text shorter than the
 * shortest form holds none (most of health's and a proc's strings). */
static void redact_in_place(char *text)
{
	if (strnlen(text, MASK_MIN_FORM) < MASK_MIN_FORM)
		return;
	char *masked = redact_text(text);
	if (strcmp(masked, text) != 0)
		memcpy(text, masked, strlen(masked) + 1);
	free(masked);
}

static void redact_tree(cJSON *node)
{
	if (node->string && !(node->type & cJSON_StringIsConst))
		redact_in_place(node->string);
	if (cJSON_IsString(node) && node->valuestring)
		redact_in_place(node->valuestring);
	for (cJSON *child = node->child; child; child = child->next)
		redact_tree(child);
}

void redact_json(cJSON *node)
{
	if (node && redact_active())
		redact_tree(node);
}
