/* clipboard-read.c: reading a selection another program owns: TARGETS
 * first, then the text (UTF8_STRING, text/plain;charset=utf-8, STRING) or,
 * with no text, image/png, converted onto a property of the worker's own
 * window, whole or by INCR; boxd's own value while it owns the selection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <X11/Xatom.h>

#include "clipboard-internal.h"
#include "clock.h"
#include "log.h"
#include "text.h"
#include "xalloc.h"

/* The names of the targets an owner offers, in the answer's header. */
#define CLIPBOARD_TARGETS_MAX 1000

static void clipboard_read_append(struct clipboard_reading *reading, const uint8_t *data,
				  size_t length)
{
	if (reading->length + length > CLIPBOARD_MAX_READ) {
		reading->too_large = true;
		reading->done = true;
		return;
	}
	if (reading->length + length > reading->capacity) {
		reading->capacity = (reading->length + length) * 2;
		reading->data = xrealloc(reading->data, reading->capacity);
	}
	memcpy(reading->data + reading->length, data, length);
	reading->length += length;
}

/* Takes the property off the window (deleting it tells an INCR owner to
 * send the next piece): false when it is not there. */
static bool clipboard_read_property(struct clipboard *clipboard, Atom *type, int *format,
				    bool *empty)
{
	struct clipboard_reading *reading = &clipboard->reading;
	unsigned long items = 0, after = 0;
	unsigned char *data = NULL;
	if (XGetWindowProperty(clipboard->display, clipboard->reader,
			       clipboard->atoms[ATOM_PROPERTY], 0, CLIPBOARD_MAX_READ / 4 + 1, True,
			       AnyPropertyType, type, format, &items, &after, &data) != Success ||
	    *type == None) {
		if (data)
			XFree(data);
		return false;
	}
	/* Xlib hands 32-bit items as longs, 16-bit ones as shorts. */
	size_t unit = *format == 32 ? sizeof(long) : *format == 16 ? sizeof(short) : 1;
	*empty = items == 0;
	if (after > 0) {
		reading->too_large = true;
		reading->done = true;
		XDeleteProperty(clipboard->display, clipboard->reader,
				clipboard->atoms[ATOM_PROPERTY]);
	} else if (*type != clipboard->atoms[ATOM_INCR]) {
		clipboard_read_append(reading, data, items * unit);
	}
	XFree(data);
	return true;
}

void clipboard_read_on_notify(struct clipboard *clipboard, const XSelectionEvent *event)
{
	struct clipboard_reading *reading = &clipboard->reading;
	if (!reading->active || reading->answered || event->requestor != clipboard->reader ||
	    event->selection != reading->selection)
		return;
	reading->answered = true;
	Atom type;
	int format;
	bool empty;
	if (event->property == None ||
	    !clipboard_read_property(clipboard, &type, &format, &empty)) {
		reading->refused = true;
		reading->done = true;
		return;
	}
	reading->type = type;
	reading->format = format;
	if (type == clipboard->atoms[ATOM_INCR]) {
		reading->incr = true; /* the pieces come as the property is deleted */
		log_msg(LOG_LEVEL_DEBUG, "the selection's owner sends it by INCR");
	} else {
		reading->done = true;
	}
	XFlush(clipboard->display);
}

void clipboard_read_on_property(struct clipboard *clipboard, const XPropertyEvent *event)
{
	struct clipboard_reading *reading = &clipboard->reading;
	if (!reading->active || !reading->incr || reading->done ||
	    event->atom != clipboard->atoms[ATOM_PROPERTY] || event->state != PropertyNewValue)
		return;
	Atom type;
	int format;
	bool empty;
	if (!clipboard_read_property(clipboard, &type, &format, &empty))
		return;
	reading->type = type;
	reading->format = format;
	reading->pieces++;
	if (empty)
		reading->done = true;
	XFlush(clipboard->display);
}

/* A read given up: its owner may still answer it, or send INCR pieces
 * for ever. Its window goes (their writes fail on the owner's side) and a
 * new one reads from now on. */
static void clipboard_abandon(struct clipboard *clipboard)
{
	XDestroyWindow(clipboard->display, clipboard->reader);
	clipboard->reader = clipboard_window_new(clipboard->display);
	XFlush(clipboard->display);
}

static bool clipboard_read_moved(const struct clipboard *clipboard)
{
	const struct clipboard_reading *reading = &clipboard->reading;
	return reading->done || reading->answered != reading->seen_answered ||
	       reading->pieces != reading->seen_pieces;
}

/* Converts `selection` to `target` onto the window's property and waits
 * for all of it: each answer (the notify, each INCR piece) within
 * CLIPBOARD_WAIT_MS of the last. */
static bool clipboard_fetch(struct clipboard *clipboard, Atom selection, Atom target,
			    enum failure *failure, char *error, size_t error_size)
{
	struct clipboard_reading *reading = &clipboard->reading;
	free(reading->data);
	*reading = (struct clipboard_reading){
		.active = true, .selection = selection, .target = target};
	XDeleteProperty(clipboard->display, clipboard->reader, clipboard->atoms[ATOM_PROPERTY]);
	XConvertSelection(clipboard->display, selection, target, clipboard->atoms[ATOM_PROPERTY],
			  clipboard->reader, CurrentTime);
	XFlush(clipboard->display);
	while (!reading->done) {
		reading->seen_answered = reading->answered;
		reading->seen_pieces = reading->pieces;
		if (!clipboard_wait(clipboard, clipboard_read_moved,
				    clock_monotonic_ms() + CLIPBOARD_WAIT_MS)) {
			reading->active = false;
			clipboard_abandon(clipboard);
			*failure = FAILURE_TIMEOUT;
			return text_fail(error, error_size,
					 "the program owning the selection did not answer within "
					 "%d ms%s",
					 CLIPBOARD_WAIT_MS,
					 reading->incr ? " (in the middle of a large value)" : "");
		}
	}
	reading->active = false;
	if (reading->too_large) {
		clipboard_abandon(clipboard);
		*failure = FAILURE_PAYLOAD_TOO_LARGE;
		return text_fail(error, error_size, "the selection holds more than %u MiB",
				 CLIPBOARD_MAX_READ >> 20);
	}
	return true;
}

/* Latin-1 (STRING) as UTF-8, in place of the reading's bytes. */
static void clipboard_latin1_to_utf8(struct clipboard_reading *reading)
{
	uint8_t *out = xmalloc(reading->length * 2 + 1);
	size_t n = 0;
	for (size_t i = 0; i < reading->length; i++) {
		uint8_t c = reading->data[i];
		if (c < 0x80) {
			out[n++] = c;
		} else {
			out[n++] = (uint8_t)(0xc0 | (c >> 6));
			out[n++] = (uint8_t)(0x80 | (c & 0x3f));
		}
	}
	free(reading->data);
	reading->data = out;
	reading->length = n;
}

static char *clipboard_target_names(struct clipboard *clipboard, const Atom *targets, size_t count)
{
	char *names = xcalloc(1, CLIPBOARD_TARGETS_MAX + 1);
	size_t used = 0;
	for (size_t i = 0; i < count && used < CLIPBOARD_TARGETS_MAX; i++) {
		char *name = XGetAtomName(clipboard->display, targets[i]);
		if (!name)
			continue;
		int n = snprintf(names + used, CLIPBOARD_TARGETS_MAX + 1 - used, "%s%s",
				 used ? "," : "", name);
		XFree(name);
		if (n > 0)
			used += (size_t)n;
	}
	return names;
}

/* The target to ask for among those the owner offers, text first; None
 * when neither text nor a PNG is among them. */
static Atom clipboard_pick(struct clipboard *clipboard, const Atom *targets, size_t count)
{
	const Atom *atoms = clipboard->atoms;
	const Atom order[] = {atoms[ATOM_UTF8_STRING], atoms[ATOM_TEXT_PLAIN_UTF8], XA_STRING,
			      atoms[ATOM_IMAGE_PNG]};
	for (size_t o = 0; o < sizeof order / sizeof order[0]; o++)
		for (size_t i = 0; i < count; i++)
			if (targets[i] == order[o])
				return order[o];
	return None;
}

/* Asks the owner for `target` and makes `content` of its answer. */
static bool clipboard_get_target(struct clipboard *clipboard, Atom selection, Atom target,
				 struct clipboard_content *content, enum failure *failure,
				 char *error, size_t error_size)
{
	if (!clipboard_fetch(clipboard, selection, target, failure, error, error_size))
		return false;
	struct clipboard_reading *reading = &clipboard->reading;
	if (reading->refused) {
		char *name = XGetAtomName(clipboard->display, target);
		*failure = FAILURE_INTERNAL;
		text_fail(error, error_size,
			  "the program owning the selection offered %s but did not hand it over",
			  name ? name : "it");
		if (name)
			XFree(name);
		return false;
	}
	if (reading->type == XA_STRING)
		clipboard_latin1_to_utf8(reading);
	content->kind =
		target == clipboard->atoms[ATOM_IMAGE_PNG] ? CLIPBOARD_IMAGE : CLIPBOARD_TEXT;
	content->data = reading->data;
	content->length = reading->length;
	reading->data = NULL;
	return true;
}

static bool clipboard_get_owned(const struct clipboard_owned *owned,
				struct clipboard_content *content)
{
	content->kind = owned->kind;
	content->data = xmalloc(owned->length ? owned->length : 1);
	memcpy(content->data, owned->data, owned->length);
	content->length = owned->length;
	return true;
}

bool clipboard_get(struct clipboard *clipboard, enum clipboard_selection selection,
		   struct clipboard_content *content, enum failure *failure, char *error,
		   size_t error_size)
{
	*content = (struct clipboard_content){.kind = CLIPBOARD_EMPTY};
	/* A SelectionClear already sent is handled before boxd trusts its copy. */
	screen_handle_events(clipboard->screen);
	clipboard_process(clipboard);
	Atom atom = clipboard->selections[selection];
	Window owner = XGetSelectionOwner(clipboard->display, atom);
	if (owner == None)
		return true;
	if (owner == clipboard->window && clipboard->owned[selection].owned)
		return clipboard_get_owned(&clipboard->owned[selection], content);
	if (!clipboard_fetch(clipboard, atom, clipboard->atoms[ATOM_TARGETS], failure, error,
			     error_size))
		return false;
	struct clipboard_reading *reading = &clipboard->reading;
	if (reading->refused || reading->type != XA_ATOM || reading->format != 32)
		/* An owner that cannot list its targets: text, if it has any. */
		return clipboard_get_target(clipboard, atom, clipboard->atoms[ATOM_UTF8_STRING],
					    content, failure, error, error_size);
	const Atom *targets = (const Atom *)reading->data;
	size_t count = reading->length / sizeof(Atom);
	Atom target = clipboard_pick(clipboard, targets, count);
	if (target == None) {
		content->kind = CLIPBOARD_OTHER;
		content->targets = clipboard_target_names(clipboard, targets, count);
		return true;
	}
	return clipboard_get_target(clipboard, atom, target, content, failure, error, error_size);
}
