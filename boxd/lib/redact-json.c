#include "redact-json.h"

#include <stdlib.h>
#include <string.h>

#include "redact.h"

/* A masked text is never longer than the text ("****" stands for 8 bytes or
 * more), so it is written over the original. */
static void redact_in_place(char *text)
{
	char *masked = redact_text(text);
	if (strcmp(masked, text) != 0)
		memcpy(text, masked, strlen(masked) + 1);
	free(masked);
}

void redact_json(cJSON *node)
{
	if (!node)
		return;
	if (node->string && !(node->type & cJSON_StringIsConst))
		redact_in_place(node->string);
	if (cJSON_IsString(node) && node->valuestring)
		redact_in_place(node->valuestring);
	for (cJSON *child = node->child; child; child = child->next)
		redact_json(child);
}
