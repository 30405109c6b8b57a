/* input.c: XTest mouse and keyboard input for the screen worker. */
#include "input.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <X11/XKBlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/XTest.h>
#include <X11/keysym.h>

#include "clock.h"
#include "input-keys.h"
#include "text.h"
#include "xalloc.h"

/* Pauses between events. Applications read XTest events like a real
 * device's; these keep apps that debounce, poll key state or time double
 * clicks (browsers, terminals) seeing what a person would do. */
#define INPUT_KEY_GAP_US 2000
#define INPUT_BUTTON_HOLD_US 10000
#define INPUT_CLICK_GAP_US 40000
#define INPUT_SCROLL_GAP_US 10000
#define INPUT_DRAG_STEPS 10
#define INPUT_DRAG_STEP_US 10000
/* How long a temporarily mapped keycode keeps its keysym after typing. */
#define INPUT_RESTORE_AFTER_MS 500

struct input {
	struct screen *screen;
	int min_code, max_code, per_code;
	KeySym *map;           /* the core keyboard mapping, read per run */
	KeySym borrowed[256];  /* keysym we put on a spare keycode, or 0 */
	int next_spare;        /* round-robin over spare keycodes */
	int64_t restore_at_ms; /* 0: nothing borrowed */
};

struct input *input_new(struct screen *screen)
{
	struct input *input = xcalloc(1, sizeof *input);
	input->screen = screen;
	return input;
}

void input_free(struct input *input)
{
	if (!input)
		return;
	if (input->map)
		XFree(input->map);
	free(input);
}

/* ---- validation ---- */

static int input_button_number(const char *name)
{
	static const char *const names[] = {"left", "middle", "right"};
	for (int i = 0; i < 3; i++)
		if (strcmp(name, names[i]) == 0)
			return i + 1;
	if (strcmp(name, "back") == 0)
		return 8;
	if (strcmp(name, "forward") == 0)
		return 9;
	return 0;
}

/* An integer member within [minimum, maximum]; absent gives `fallback`
 * unless `required`. */
static bool input_int(const cJSON *action, const char *name, int minimum, int maximum,
		      bool required, int fallback, int *value)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(action, name);
	if (!item) {
		*value = fallback;
		return !required;
	}
	/* Range first: converting an out-of-range double to an integer is undefined. */
	if (!cJSON_IsNumber(item) || item->valuedouble < minimum || item->valuedouble > maximum ||
	    item->valuedouble != (double)(int)item->valuedouble)
		return false;
	*value = (int)item->valuedouble;
	return true;
}

static bool input_point(const cJSON *action, const char *name, int point[2])
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(action, name);
	if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 2)
		return false;
	for (int i = 0; i < 2; i++) {
		const cJSON *coordinate = cJSON_GetArrayItem(item, i);
		if (!cJSON_IsNumber(coordinate) || coordinate->valuedouble < 0 ||
		    coordinate->valuedouble > 32767 ||
		    coordinate->valuedouble != (double)(int)coordinate->valuedouble)
			return false;
		point[i] = (int)coordinate->valuedouble;
	}
	return true;
}

static int input_action_button(const cJSON *action)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(action, "button");
	if (!item)
		return 1;
	return cJSON_IsString(item) ? input_button_number(item->valuestring) : 0;
}

static bool input_check_one(const cJSON *action, char *why, size_t why_size)
{
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(action, "type"));
	int value, point[2];
	if (!cJSON_IsObject(action) || !type) {
		snprintf(why, why_size, "is not an object with a \"type\"");
	} else if (strcmp(type, "move") == 0) {
		if (input_int(action, "x", 0, 32767, true, 0, &value) &&
		    input_int(action, "y", 0, 32767, true, 0, &value))
			return true;
		snprintf(why, why_size, "(move) needs integer x and y from 0 to 32767");
	} else if (strcmp(type, "click") == 0 || strcmp(type, "down") == 0 ||
		   strcmp(type, "up") == 0) {
		if (!input_action_button(action))
			snprintf(why, why_size,
				 "has a button other than left, middle, right, back or forward");
		else if (!input_int(action, "count", 1, 3, false, 1, &value))
			snprintf(why, why_size, "has a count other than 1, 2 or 3");
		else
			return true;
	} else if (strcmp(type, "scroll") == 0) {
		if (input_int(action, "dx", -100, 100, false, 0, &value) &&
		    input_int(action, "dy", -100, 100, false, 0, &value))
			return true;
		snprintf(why, why_size, "(scroll) needs integer dx and dy from -100 to 100");
	} else if (strcmp(type, "drag") == 0) {
		if (input_point(action, "from", point) && input_point(action, "to", point) &&
		    input_action_button(action))
			return true;
		snprintf(
			why, why_size,
			"(drag) needs \"from\" and \"to\" as [x, y] with integers from 0 to 32767");
	} else if (strcmp(type, "type") == 0) {
		const char *text =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(action, "text"));
		size_t length = text ? strlen(text) : 0;
		if (!text)
			snprintf(why, why_size, "(type) needs a \"text\" string");
		else if (length > INPUT_MAX_TEXT_BYTES)
			snprintf(why, why_size, "(type) has more than %d bytes of text",
				 INPUT_MAX_TEXT_BYTES);
		else
			return true;
	} else if (strcmp(type, "key") == 0) {
		const char *keys =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(action, "keys"));
		KeySym keysyms[INPUT_KEYS_MAX_COMBO];
		if (!keys)
			snprintf(why, why_size,
				 "(key) needs a \"keys\" string such as \"ctrl+shift+t\"");
		else if (input_keys_parse(keys, keysyms, why, why_size))
			return true;
	} else if (strcmp(type, "wait") == 0) {
		if (input_int(action, "ms", 0, INPUT_MAX_WAIT_MS, true, 0, &value))
			return true;
		snprintf(why, why_size, "(wait) needs an integer ms from 0 to %d",
			 INPUT_MAX_WAIT_MS);
	} else {
		snprintf(why, why_size, "has the unknown type \"%.40s\"", type);
	}
	return false;
}

bool input_check(const cJSON *actions, char *error, size_t error_size)
{
	if (!cJSON_IsArray(actions))
		return text_fail(error, error_size, "\"actions\" must be an array of actions");
	int count = cJSON_GetArraySize(actions);
	if (count > INPUT_MAX_ACTIONS) {
		snprintf(error, error_size, "%d actions in one request; at most %d", count,
			 INPUT_MAX_ACTIONS);
		return false;
	}
	int index = 0;
	long total_wait_ms = 0;
	size_t total_text = 0;
	const cJSON *action;
	cJSON_ArrayForEach(action, actions)
	{
		char why[200];
		if (!input_check_one(action, why, sizeof why))
			return text_fail(error, error_size, "action %d %s", index, why);
		/* Only a wait's "ms" counts (and was range-checked above); the
		 * same field on another action is ignored, never converted. */
		const char *type =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(action, "type"));
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(action, "ms");
		const char *text =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(action, "text"));
		if (type && strcmp(type, "wait") == 0 && cJSON_IsNumber(ms))
			total_wait_ms += (long)ms->valuedouble;
		if (text)
			total_text += strlen(text);
		index++;
	}
	/* One request holds the worker (and the shots behind it) for at most
	 * about two minutes. */
	if (total_wait_ms > INPUT_MAX_WAIT_MS || total_text > INPUT_MAX_TEXT_BYTES) {
		snprintf(error, error_size,
			 "the actions wait %ld ms and type %zu bytes in all; at most %d ms and %d "
			 "bytes a request",
			 total_wait_ms, total_text, INPUT_MAX_WAIT_MS, INPUT_MAX_TEXT_BYTES);
		return false;
	}
	return true;
}

/* ---- the keyboard ---- */

static void input_pause(long microseconds)
{
	struct timespec pause = {microseconds / 1000000, (microseconds % 1000000) * 1000};
	while (nanosleep(&pause, &pause) != 0)
		;
}

static Display *input_display(struct input *input)
{
	return screen_display(input->screen);
}

static void input_load_keymap(struct input *input)
{
	Display *display = input_display(input);
	if (input->map)
		XFree(input->map);
	XDisplayKeycodes(display, &input->min_code, &input->max_code);
	input->map = XGetKeyboardMapping(display, (KeyCode)input->min_code,
					 input->max_code - input->min_code + 1, &input->per_code);
}

static KeySym input_map_at(const struct input *input, int code, int level)
{
	if (!input->map || level >= input->per_code)
		return NoSymbol;
	return input->map[(code - input->min_code) * input->per_code + level];
}

/* The keycode typing `keysym` at level 0 (plain) or 1 (with shift). */
static int input_find_key(const struct input *input, KeySym keysym, bool *shift)
{
	for (int level = 0; level < 2; level++) {
		for (int code = input->min_code; code <= input->max_code; code++) {
			KeySym here = input_map_at(input, code, level);
			if (level == 1 && here == NoSymbol) {
				/* A letter listed only in lower case gets its capital from shift. */
				KeySym lower, upper;
				XConvertCase(input_map_at(input, code, 0), &lower, &upper);
				if (upper != lower)
					here = upper;
			}
			if (here == keysym) {
				*shift = level == 1;
				return code;
			}
		}
	}
	return 0;
}

static bool input_code_is_spare(const struct input *input, int code)
{
	if (input->borrowed[code])
		return true;
	for (int level = 0; level < input->per_code; level++)
		if (input_map_at(input, code, level) != NoSymbol)
			return false;
	return true;
}

/* Puts `keysym` on a spare keycode (both levels, so shift does not matter). */
static int input_borrow_key(struct input *input, KeySym keysym)
{
	int span = input->max_code - input->min_code + 1;
	for (int tries = 0; tries < span; tries++) {
		int code = input->min_code + (input->next_spare++ % span);
		if (code > 255 || !input_code_is_spare(input, code))
			continue;
		KeySym row[2] = {keysym, keysym};
		XChangeKeyboardMapping(input_display(input), code, 2, row, 1);
		/* Applications must see the new mapping before the key event. */
		XSync(input_display(input), False);
		for (int level = 0; level < input->per_code; level++)
			input->map[(code - input->min_code) * input->per_code + level] =
				level < 2 ? keysym : NoSymbol;
		input->borrowed[code] = keysym;
		input->restore_at_ms = clock_monotonic_ms() + INPUT_RESTORE_AFTER_MS;
		return code;
	}
	return 0;
}

int input_restore_due_ms(const struct input *input)
{
	if (!input->restore_at_ms)
		return -1;
	int64_t left = input->restore_at_ms - clock_monotonic_ms();
	return left < 0 ? 0 : (int)left;
}

void input_restore_keymap(struct input *input)
{
	Display *display = input_display(input);
	KeySym none[2] = {NoSymbol, NoSymbol};
	for (int code = 0; code < 256; code++) {
		if (!input->borrowed[code])
			continue;
		XChangeKeyboardMapping(display, code, 2, none, 1);
		input->borrowed[code] = 0;
	}
	XSync(display, False);
	input->restore_at_ms = 0;
}

static void input_key(struct input *input, int code, bool press)
{
	XTestFakeKeyEvent(input_display(input), (unsigned)code, press, CurrentTime);
	XFlush(input_display(input));
	input_pause(INPUT_KEY_GAP_US);
}

/* Presses and releases `keysym`, with shift when its level needs it. */
static bool input_tap_keysym(struct input *input, KeySym keysym, char *error, size_t error_size)
{
	bool shift = false;
	int code = input_find_key(input, keysym, &shift);
	if (!code)
		code = input_borrow_key(input, keysym);
	if (!code)
		return text_fail(error, error_size, "no keycode is free to type the keysym 0x%lx",
				 keysym);
	int shift_code = shift ? XKeysymToKeycode(input_display(input), XK_Shift_L) : 0;
	if (shift_code)
		input_key(input, shift_code, true);
	input_key(input, code, true);
	input_key(input, code, false);
	if (shift_code)
		input_key(input, shift_code, false);
	return true;
}

static bool input_type(struct input *input, const char *text, char *error, size_t error_size)
{
	size_t length = strlen(text);
	while (length > 0) {
		uint32_t codepoint;
		size_t used = input_keys_utf8_next(text, length, &codepoint);
		if (used == 0) {
			/* Invalid UTF-8 types as U+FFFD, like the rest of the API reads it. */
			codepoint = 0xfffd;
			used = 1;
		}
		if (!input_tap_keysym(input, input_keys_for_codepoint(codepoint), error,
				      error_size))
			return false;
		text += used;
		length -= used;
	}
	return true;
}

static bool input_combo(struct input *input, const char *keys, char *error, size_t error_size)
{
	KeySym keysyms[INPUT_KEYS_MAX_COMBO];
	int count = input_keys_parse(keys, keysyms, error, error_size);
	if (count <= 0)
		return false; /* `error` says why (checked before any action ran, too) */
	if (count == 1)
		return input_tap_keysym(input, keysyms[0], error, error_size);
	int codes[INPUT_KEYS_MAX_COMBO];
	for (int i = 0; i < count; i++) {
		bool shift;
		codes[i] = input_find_key(input, keysyms[i], &shift);
		if (!codes[i])
			codes[i] = input_borrow_key(input, keysyms[i]);
		if (!codes[i])
			return text_fail(error, error_size, "no keycode is free for \"%s\"", keys);
	}
	for (int i = 0; i < count; i++)
		input_key(input, codes[i], true);
	for (int i = count - 1; i >= 0; i--)
		input_key(input, codes[i], false);
	return true;
}

/* ---- the mouse ---- */

static void input_button(struct input *input, int button, bool press)
{
	XTestFakeButtonEvent(input_display(input), (unsigned)button, press, CurrentTime);
	XFlush(input_display(input));
}

static void input_move(struct input *input, int x, int y)
{
	XTestFakeMotionEvent(input_display(input), -1, x, y, CurrentTime);
	XFlush(input_display(input));
}

static void input_click(struct input *input, int button, int count)
{
	for (int i = 0; i < count; i++) {
		if (i > 0)
			input_pause(INPUT_CLICK_GAP_US);
		input_button(input, button, true);
		input_pause(INPUT_BUTTON_HOLD_US);
		input_button(input, button, false);
	}
}

static void input_scroll(struct input *input, int dx, int dy)
{
	/* Buttons 4/5 scroll up/down, 6/7 left/right: one press per notch. */
	for (int i = 0; i < abs(dy); i++) {
		input_click(input, dy < 0 ? 4 : 5, 1);
		input_pause(INPUT_SCROLL_GAP_US);
	}
	for (int i = 0; i < abs(dx); i++) {
		input_click(input, dx < 0 ? 6 : 7, 1);
		input_pause(INPUT_SCROLL_GAP_US);
	}
}

static void input_drag(struct input *input, int button, const int from[2], const int to[2])
{
	input_move(input, from[0], from[1]);
	input_pause(INPUT_DRAG_STEP_US);
	input_button(input, button, true);
	for (int step = 1; step <= INPUT_DRAG_STEPS; step++) {
		input_pause(INPUT_DRAG_STEP_US);
		input_move(input, from[0] + (to[0] - from[0]) * step / INPUT_DRAG_STEPS,
			   from[1] + (to[1] - from[1]) * step / INPUT_DRAG_STEPS);
	}
	input_pause(INPUT_DRAG_STEP_US);
	input_button(input, button, false);
}

static bool input_run_one(struct input *input, const cJSON *action, char *error, size_t error_size)
{
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(action, "type"));
	int x = 0, y = 0, count = 1, point_from[2] = {0, 0}, point_to[2] = {0, 0};
	if (strcmp(type, "move") == 0) {
		input_int(action, "x", 0, 32767, true, 0, &x);
		input_int(action, "y", 0, 32767, true, 0, &y);
		input_move(input, x, y);
	} else if (strcmp(type, "click") == 0) {
		input_int(action, "count", 1, 3, false, 1, &count);
		input_click(input, input_action_button(action), count);
	} else if (strcmp(type, "down") == 0 || strcmp(type, "up") == 0) {
		input_button(input, input_action_button(action), type[0] == 'd');
	} else if (strcmp(type, "scroll") == 0) {
		input_int(action, "dx", -100, 100, false, 0, &x);
		input_int(action, "dy", -100, 100, false, 0, &y);
		input_scroll(input, x, y);
	} else if (strcmp(type, "drag") == 0) {
		input_point(action, "from", point_from);
		input_point(action, "to", point_to);
		input_drag(input, input_action_button(action), point_from, point_to);
	} else if (strcmp(type, "type") == 0) {
		const char *text = cJSON_GetObjectItemCaseSensitive(action, "text")->valuestring;
		return input_type(input, text, error, error_size);
	} else if (strcmp(type, "key") == 0) {
		const char *keys = cJSON_GetObjectItemCaseSensitive(action, "keys")->valuestring;
		return input_combo(input, keys, error, error_size);
	} else if (strcmp(type, "wait") == 0) {
		input_int(action, "ms", 0, INPUT_MAX_WAIT_MS, true, 0, &count);
		XSync(input_display(input), False);
		input_pause((long)count * 1000);
	}
	return true;
}

bool input_run(struct input *input, const cJSON *actions, int *done, char *error, size_t error_size)
{
	*done = 0;
	input_load_keymap(input);
	const cJSON *action;
	bool ok = true;
	cJSON_ArrayForEach(action, actions)
	{
		if (!input_run_one(input, action, error, error_size)) {
			ok = false;
			break;
		}
		(*done)++;
	}
	/* Answer only once the server has taken every event. */
	XSync(input_display(input), False);
	return ok;
}
