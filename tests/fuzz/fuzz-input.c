/* fuzz-input: POST /v1/screen/input bodies as the screen worker checks them
 * before anything happens: the JSON, input_check over the action list (key
 * combinations through input_keys_parse), and every "type" action's text
 * through the UTF-8 decoder and keysym lookup that typing uses. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "input-keys.h"
#include "input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* input.c asks the screen for its display only when it runs actions. */
Display *screen_display(struct screen *screen)
{
	(void)screen;
	abort();
}

static void walk_text(const char *text)
{
	size_t length = strlen(text);
	while (length) {
		uint32_t codepoint;
		size_t used = input_keys_utf8_next(text, length, &codepoint);
		if (used == 0 || used > length)
			break;
		(void)input_keys_for_codepoint(codepoint);
		text += used;
		length -= used;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *body = cJSON_ParseWithLength((const char *)data, size);
	const cJSON *actions = cJSON_GetObjectItemCaseSensitive(body, "actions");
	char error[256];
	if (actions && input_check(actions, error, sizeof error)) {
		const cJSON *action;
		cJSON_ArrayForEach(action, actions)
		{
			const cJSON *text = cJSON_GetObjectItemCaseSensitive(action, "text");
			if (cJSON_IsString(text))
				walk_text(text->valuestring);
		}
	}
	cJSON_Delete(body);
	return 0;
}
