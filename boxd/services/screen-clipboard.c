/* screen-clipboard.c: the clipboard's calls to the screen worker
 * (screen-client.h, "the clipboard"): reading a selection, owning one. */
#include <string.h>

#include "screen-client-internal.h"
#include "screen-client.h"

static void screen_clipboard_answered(const struct screen_call *call, const cJSON *answer,
				      const void *payload, size_t length)
{
	static const char *const kinds[] = {
		[SCREEN_CLIPBOARD_TEXT] = "text",
		[SCREEN_CLIPBOARD_IMAGE] = "image",
		[SCREEN_CLIPBOARD_EMPTY] = "empty",
		[SCREEN_CLIPBOARD_OTHER] = "other",
	};
	struct screen_failure failed;
	if (screen_failed(answer, SCREEN_NO_REASON, &failed)) {
		call->done.clipboard(call->arg, NULL, &failed);
		return;
	}
	const char *kind = screen_string(answer, "kind");
	size_t k = 0;
	while (kind && k < sizeof kinds / sizeof kinds[0] && strcmp(kind, kinds[k]) != 0)
		k++;
	if (!kind || k == sizeof kinds / sizeof kinds[0]) {
		failed = (struct screen_failure){FAILURE_INTERNAL,
						 "the screen worker answered no kind of value"};
		call->done.clipboard(call->arg, NULL, &failed);
		return;
	}
	struct screen_clipboard content = {
		.kind = (enum screen_clipboard_kind)k,
		.targets = screen_string(answer, "targets"),
		.data = payload,
		.length = length,
	};
	call->done.clipboard(call->arg, &content, NULL);
}

void screen_clipboard_get(const char *selection, screen_clipboard_done_fn done, void *arg)
{
	cJSON *request = screen_op("clipboard_get");
	cJSON_AddStringToObject(request, "selection", selection);
	screen_request_with(request,
			    (struct screen_call){.answered = screen_clipboard_answered,
						 .done.clipboard = done,
						 .arg = arg},
			    NULL, 0);
}

static void screen_clipboard_set_answered(const struct screen_call *call, const cJSON *answer,
					  const void *payload, size_t length)
{
	struct screen_failure failed;
	bool failure = screen_failed(answer, SCREEN_NO_REASON, &failed);
	call->done.clipboard_set(call->arg, failure ? &failed : NULL);
}

void screen_clipboard_set(const char *selection, bool image, const void *data, size_t length,
			  screen_clipboard_set_fn done, void *arg)
{
	cJSON *request = screen_op("clipboard_set");
	cJSON_AddStringToObject(request, "selection", selection);
	cJSON_AddStringToObject(request, "kind", image ? "image" : "text");
	screen_request_with(request,
			    (struct screen_call){.answered = screen_clipboard_set_answered,
						 .done.clipboard_set = done,
						 .arg = arg},
			    data, length);
}
