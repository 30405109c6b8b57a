/* input.h: mouse and keyboard input through XTest, for the screen worker.
 *
 * Actions come as the API's JSON array ({"type":"move","x":10,"y":20}, ...).
 * input_check() validates the whole list before anything happens, so a bad
 * action never leaves half a sequence done; input_run() then performs them in
 * order with the small pauses real applications need, and returns once the X
 * server has processed every event (XSync). */
#ifndef BOXD_INPUT_H
#define BOXD_INPUT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "screen.h"

/* Limits on one request (waits and text add up across its actions), so a
 * hostile list cannot hold the worker for long. */
#define INPUT_MAX_ACTIONS 1000
#define INPUT_MAX_WAIT_MS 60000
/* Typing runs at about 250 characters a second (each key is pressed and
 * released with a pause after each event), so 16 KiB is about a minute. */
#define INPUT_MAX_TEXT_BYTES (16 * 1024)

struct input;

struct input *input_new(struct screen *screen);
void input_free(struct input *input);

/* Validates `actions`; false with a sentence naming the bad action. */
bool input_check(const cJSON *actions, char *error, size_t error_size);
/* Performs checked `actions`; *done counts those completed. False with a
 * sentence when the server refused something. */
bool input_run(struct input *input, const cJSON *actions, int *done, char *error,
	       size_t error_size);

/* Typing a character the keymap lacks maps it onto a spare keycode for a
 * moment; the mapping is undone a little later, once applications have
 * read it. Milliseconds until that is due (-1: nothing to undo), and the undo. */
int input_restore_due_ms(const struct input *input);
void input_restore_keymap(struct input *input);

#endif
