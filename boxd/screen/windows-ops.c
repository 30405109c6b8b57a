/* windows-ops.c: the screen worker's windows and window_focus requests
 * (the listing and the focusing are windows.c's). */
#include <stdint.h>

#include "screen-worker.h"
#include "windows.h"

static cJSON *window_json(const struct window_info *window)
{
	cJSON *json = cJSON_CreateObject();
	cJSON_AddNumberToObject(json, "id", window->id);
	cJSON_AddStringToObject(json, "title", window->title);
	cJSON_AddStringToObject(json, "class", window->class_name);
	if (window->pid >= 0)
		cJSON_AddNumberToObject(json, "pid", (double)window->pid);
	else
		cJSON_AddNullToObject(json, "pid");
	cJSON_AddNumberToObject(json, "x", window->x);
	cJSON_AddNumberToObject(json, "y", window->y);
	cJSON_AddNumberToObject(json, "width", window->width);
	cJSON_AddNumberToObject(json, "height", window->height);
	cJSON_AddBoolToObject(json, "focused", window->focused);
	cJSON_AddBoolToObject(json, "visible", window->visible);
	return json;
}

/* {"windows": [...]}, bottom to top. */
void op_windows(struct worker *worker, double id, const cJSON *request)
{
	struct window_list list;
	windows_list(worker->windows, &list);
	cJSON *answer = worker_answer(id);
	cJSON *array = cJSON_AddArrayToObject(answer, "windows");
	for (size_t i = 0; i < list.count; i++)
		cJSON_AddItemToArray(array, window_json(&list.items[i]));
	window_list_clear(&list);
	worker_send(worker, answer, NULL, 0);
}

/* {"window": N} -> {"window": {...}}, the entry once focused. */
void op_window_focus(struct worker *worker, double id, const cJSON *request)
{
	long window;
	if (!cJSON_GetObjectItemCaseSensitive(request, "window") ||
	    !worker_integer(request, "window", 0, 1, UINT32_MAX, &window)) {
		worker_error(worker, id, FAILURE_BAD_REQUEST, "window_focus needs a window id");
		return;
	}
	struct window_list list;
	size_t index;
	enum failure failure;
	char error[256];
	if (!windows_focus(worker->windows, (uint32_t)window, &list, &index, &failure, error,
			   sizeof error)) {
		worker_error(worker, id, failure, "%s", error);
		return;
	}
	cJSON *answer = worker_answer(id);
	cJSON_AddItemToObject(answer, "window", window_json(&list.items[index]));
	window_list_clear(&list);
	worker_send(worker, answer, NULL, 0);
}
