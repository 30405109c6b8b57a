/* api-screen-windows.c: GET /v1/screen/windows and
 * POST /v1/screen/windows/{id}/focus.
 *
 * The windows are read and focused by the screen worker (screen-client.h);
 * here are the HTTP shapes (ids as "0x..." text), the lock rule for focus
 * (it is input: refused while a person has the screen, unless it carries
 * the takeover token) and its step. Titles are masked as every answer is
 * (redact_json, on the way out). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "lock.h"
#include "router.h"
#include "screen-client.h"
#include "steps.h"
#include "xalloc.h"

static cJSON *window_json(const struct screen_window *window)
{
	char id[16];
	snprintf(id, sizeof id, "0x%x", window->id);
	cJSON *json = cJSON_CreateObject();
	cJSON_AddStringToObject(json, "id", id);
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

static void screen_on_windows(void *arg, const struct screen_window *windows, size_t count,
			      const struct screen_failure *failed)
{
	struct api_request *req = arg;
	if (failed) {
		api_reply_failure(req, failed->failure, "%s", failed->message);
		return;
	}
	cJSON *reply = cJSON_CreateObject();
	cJSON *array = cJSON_AddArrayToObject(reply, "windows");
	for (size_t i = 0; i < count; i++)
		cJSON_AddItemToArray(array, window_json(&windows[i]));
	api_reply_json(req, 200, reply);
}

static void handle_windows(struct api_request *req)
{
	screen_windows(screen_on_windows, req);
}

/* A window id as the list gives it ("0x1a00007") or as xdotool prints it
 * (decimal): at most 32 bits. False for anything else. */
static bool window_id_parse(const char *text, uint32_t *id)
{
	bool hex = text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
	const char *digits = hex ? text + 2 : text;
	size_t length = strlen(digits);
	if (length == 0 || length > (hex ? 8 : 10) ||
	    digits[strspn(digits, hex ? "0123456789abcdefABCDEF" : "0123456789")] != '\0')
		return false;
	errno = 0;
	unsigned long long value = strtoull(digits, NULL, hex ? 16 : 10);
	if (errno || value > UINT32_MAX)
		return false;
	*id = (uint32_t)value;
	return true;
}

struct focus_call {
	struct api_request *req;
	bool person;
};

static void screen_on_focus(void *arg, const struct screen_window *window,
			    const struct screen_failure *failed)
{
	struct focus_call *call = arg;
	struct api_request *req = call->req;
	bool person = call->person;
	free(call);
	if (failed) {
		api_reply_failure(req, failed->failure, "%s", failed->message);
		return;
	}
	steps_add("input", "%sfocus window 0x%x (%.60s)", person ? "the person (takeover): " : "",
		  window->id, window->class_name[0] ? window->class_name : "no class");
	api_reply_json(req, 200, window_json(window));
}

static void handle_focus(struct api_request *req)
{
	/* Focus is input: the lock rule of POST /v1/screen/input. */
	if (!lock_admits(api_header(req, "X-Takeover"))) {
		api_reply_failure(req, FAILURE_LOCKED,
				  "a person has the screen; wait until they hand it back");
		return;
	}
	const char *text = api_param(req, 0);
	uint32_t id;
	if (!window_id_parse(text, &id)) {
		api_reply_bad_request(req,
				      "a window id is 0x and up to 8 hex digits (as the list gives "
				      "it) or decimal digits, not \"%.40s\"",
				      text);
		return;
	}
	if (id == 0) {
		api_reply_failure(req, FAILURE_NOT_FOUND, "no top-level window 0x0 on the display");
		return;
	}
	struct focus_call *call = xmalloc(sizeof *call);
	*call = (struct focus_call){req, lock_is_locked()};
	screen_window_focus(id, screen_on_focus, call);
}

const struct api_route api_screen_windows_routes[] = {
	{"GET", "/v1/screen/windows", 0, 0, handle_windows},
	/* Locked too, but with the takeover exception: see handle_focus. */
	{"POST", "/v1/screen/windows/{}/focus", API_IDEMPOTENT, 0, handle_focus},
	{0},
};
