/* clipboard-ops.c: the worker's clipboard requests (clipboard_get,
 * clipboard_set), its owner-change reports, and `hold`, which keeps the
 * worker from retiring while boxd wants those reports. The selections
 * themselves are clipboard.c's. */
#include <stdlib.h>
#include <string.h>

#include "clipboard.h"
#include "screen-worker.h"

static const char *const kind_names[] = {
	[CLIPBOARD_TEXT] = "text",
	[CLIPBOARD_IMAGE] = "image",
	[CLIPBOARD_EMPTY] = "empty",
	[CLIPBOARD_OTHER] = "other",
};

/* {"event":"clipboard","selection":"clipboard"|"primary"} */
static void worker_clipboard_changed(void *ctx, const char *selection)
{
	cJSON *event = cJSON_CreateObject();
	cJSON_AddStringToObject(event, "event", "clipboard");
	cJSON_AddStringToObject(event, "selection", selection);
	worker_send(ctx, event, NULL, 0);
}

void worker_clipboard_start(struct worker *worker)
{
	worker->clipboard = clipboard_new(worker->screen, worker_clipboard_changed, worker);
}

static bool worker_selection(struct worker *worker, double id, const cJSON *request,
			     enum clipboard_selection *selection)
{
	const char *name =
		cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(request, "selection"));
	if (clipboard_selection_from_name(name ? name : "clipboard", selection))
		return true;
	worker_error(worker, id, FAILURE_BAD_REQUEST,
		     "selection must be clipboard or primary, not \"%.40s\"", name);
	return false;
}

void op_clipboard_get(struct worker *worker, double id, const cJSON *request)
{
	enum clipboard_selection selection;
	if (!worker_selection(worker, id, request, &selection))
		return;
	struct clipboard_content content;
	enum failure failure;
	char error[512];
	if (!clipboard_get(worker->clipboard, selection, &content, &failure, error, sizeof error)) {
		worker_error(worker, id, failure, "%s", error);
		return;
	}
	cJSON *answer = worker_answer(id);
	cJSON_AddStringToObject(answer, "kind", kind_names[content.kind]);
	if (content.targets)
		cJSON_AddStringToObject(answer, "targets", content.targets);
	worker_send(worker, answer, content.data, content.length);
	free(content.data);
	free(content.targets);
}

void op_clipboard_set(struct worker *worker, double id, const cJSON *request)
{
	enum clipboard_selection selection;
	if (!worker_selection(worker, id, request, &selection))
		return;
	const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(request, "kind"));
	if (!kind || (strcmp(kind, "text") != 0 && strcmp(kind, "image") != 0)) {
		worker_error(worker, id, FAILURE_BAD_REQUEST, "kind must be text or image");
		return;
	}
	enum failure failure;
	char error[512];
	if (!clipboard_set(worker->clipboard, selection,
			   kind[0] == 't' ? CLIPBOARD_TEXT : CLIPBOARD_IMAGE, worker->payload,
			   worker->payload_length, &failure, error, sizeof error)) {
		worker_error(worker, id, failure, "%s", error);
		return;
	}
	cJSON *answer = worker_answer(id);
	cJSON_AddNumberToObject(answer, "bytes", (double)worker->payload_length);
	worker_send(worker, answer, NULL, 0);
}

void op_hold(struct worker *worker, double id, const cJSON *request)
{
	worker->held = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(request, "hold"));
	cJSON *answer = worker_answer(id);
	cJSON_AddBoolToObject(answer, "held", worker->held);
	worker_send(worker, answer, NULL, 0);
}
