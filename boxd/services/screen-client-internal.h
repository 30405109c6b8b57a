/* screen-client-internal.h: what screen-client.c (the worker's life, its
 * frames, shots, input, recordings, the live screen) shares with
 * screen-clipboard.c (the clipboard's calls): a call on its way, sending a
 * request, reading an answer. Internal to those two files. */
#ifndef BOXD_SCREEN_CLIENT_INTERNAL_H
#define BOXD_SCREEN_CLIENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "screen-client.h"

struct screen_call;
/* Reads a call's answer (an error too) and runs the caller's callback. */
typedef void (*screen_answered_fn)(const struct screen_call *call, const cJSON *answer,
				   const void *payload, size_t length);

/* A request on its way: its id, how to read its answer, whom to tell. */
struct screen_call {
	uint32_t id;
	screen_answered_fn answered;
	union {
		screen_shot_done_fn shot;
		screen_input_done_fn input;
		screen_record_done_fn record;
		screen_live_started_fn live;
		screen_clipboard_done_fn clipboard;
		screen_clipboard_set_fn clipboard_set;
		screen_windows_done_fn windows;
		screen_window_focus_done_fn focus;
	} done;
	void *arg;
	struct screen_call *next;
};

/* Sends `request` ({"op":..., ...}; taken over, its "id" is set here) with
 * `length` bytes of payload (copied; a value for the clipboard) to the
 * worker, starting the worker if needed; `call` says how its answer is read
 * and whom it goes to. */
void screen_request_with(cJSON *request, struct screen_call call, const void *payload,
			 size_t length);
/* {"op": op}, to add fields to. */
cJSON *screen_op(const char *op);
/* Said when the worker failed without a sentence (it always gives one). */
#define SCREEN_NO_REASON "the screen worker failed without saying why"
/* True when `answer` is not a success; `failed` then says why (`fallback`
 * when the worker gave no sentence). */
bool screen_failed(const cJSON *answer, const char *fallback, struct screen_failure *failed);
/* A string member of an answer, or NULL. */
const char *screen_string(const cJSON *object, const char *name);
/* For requests whose answer tells nothing the caller needs. */
void screen_ignore_answer(const struct screen_call *call, const cJSON *answer, const void *payload,
			  size_t length);

#endif
