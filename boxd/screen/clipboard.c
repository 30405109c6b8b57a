/* clipboard.c: the worker owning CLIPBOARD or PRIMARY and answering the
 * programs that paste it (ICCCM: TARGETS, TIMESTAMP, UTF8_STRING, STRING,
 * TEXT, text/plain;charset=utf-8, image/png; INCR for large values), the
 * queue of selection events and the owner-change reports. Reading another
 * program's selection is clipboard-read.c's. */
#include "clipboard.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <X11/Xatom.h>
#include <X11/extensions/Xfixes.h>

#include "clipboard-internal.h"
#include "clock.h"
#include "log.h"
#include "text.h"
#include "xalloc.h"

static const char *const atom_names[ATOM_COUNT] = {
	[ATOM_CLIPBOARD] = "CLIPBOARD",
	[ATOM_TARGETS] = "TARGETS",
	[ATOM_TIMESTAMP] = "TIMESTAMP",
	[ATOM_UTF8_STRING] = "UTF8_STRING",
	[ATOM_TEXT] = "TEXT",
	[ATOM_TEXT_PLAIN_UTF8] = "text/plain;charset=utf-8",
	[ATOM_TEXT_PLAIN] = "text/plain",
	[ATOM_IMAGE_PNG] = "image/png",
	[ATOM_INCR] = "INCR",
	[ATOM_PROPERTY] = "BOXD_SELECTION",
	[ATOM_CLOCK] = "BOXD_CLOCK",
};

static const char *const selection_names[CLIPBOARD_SELECTIONS] = {
	[CLIPBOARD_CLIPBOARD] = "clipboard",
	[CLIPBOARD_PRIMARY] = "primary",
};

bool clipboard_selection_from_name(const char *name, enum clipboard_selection *selection)
{
	for (int i = 0; i < CLIPBOARD_SELECTIONS; i++)
		if (name && strcmp(name, selection_names[i]) == 0) {
			*selection = (enum clipboard_selection)i;
			return true;
		}
	return false;
}

static int clipboard_index(const struct clipboard *clipboard, Atom selection)
{
	for (int i = 0; i < CLIPBOARD_SELECTIONS; i++)
		if (clipboard->selections[i] == selection)
			return i;
	return -1;
}

/* ---- the queue: filled by any thread, emptied by the main one ---- */

static void clipboard_sink(void *ctx, const XEvent *event)
{
	struct clipboard *clipboard = ctx;
	pthread_mutex_lock(&clipboard->lock);
	if (clipboard->queued == clipboard->queue_capacity) {
		clipboard->queue_capacity =
			clipboard->queue_capacity ? clipboard->queue_capacity * 2 : 16;
		clipboard->queue = xrealloc(clipboard->queue,
					    clipboard->queue_capacity * sizeof *clipboard->queue);
	}
	clipboard->queue[clipboard->queued++] = *event;
	pthread_mutex_unlock(&clipboard->lock);
	uint64_t one = 1;
	ssize_t unused = write(clipboard->event_fd, &one, sizeof one);
	(void)unused;
}

Window clipboard_window_new(Display *display)
{
	/* Never mapped: nothing shows, and it still owns selections and gets
	 * property events. */
	Window window =
		XCreateSimpleWindow(display, DefaultRootWindow(display), -10, -10, 1, 1, 0, 0, 0);
	XSelectInput(display, window, PropertyChangeMask);
	return window;
}

struct clipboard *clipboard_new(struct screen *screen, clipboard_changed_fn changed, void *ctx)
{
	struct clipboard *clipboard = xcalloc(1, sizeof *clipboard);
	Display *display = screen_display(screen);
	clipboard->screen = screen;
	clipboard->display = display;
	clipboard->changed = changed;
	clipboard->changed_ctx = ctx;
	pthread_mutex_init(&clipboard->lock, NULL);
	clipboard->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	XInternAtoms(display, (char **)atom_names, ATOM_COUNT, False, clipboard->atoms);
	clipboard->selections[CLIPBOARD_CLIPBOARD] = clipboard->atoms[ATOM_CLIPBOARD];
	clipboard->selections[CLIPBOARD_PRIMARY] = XA_PRIMARY;
	clipboard->window = clipboard_window_new(display);
	clipboard->reader = clipboard_window_new(display);
	/* Without BIG-REQUESTS: the size every client and server takes, and
	 * what pasting programs expect pieces of (xclip, GTK and Qt alike). */
	clipboard->piece = (size_t)XMaxRequestSize(display) * 4 - 256;
	clipboard->xfixes_event_base = screen_xfixes_event_base(screen);
	screen_set_event_sink(screen, clipboard_sink, clipboard);
	if (clipboard->xfixes_event_base >= 0)
		for (int i = 0; i < CLIPBOARD_SELECTIONS; i++)
			XFixesSelectSelectionInput(display, clipboard->window,
						   clipboard->selections[i],
						   XFixesSetSelectionOwnerNotifyMask |
							   XFixesSelectionWindowDestroyNotifyMask |
							   XFixesSelectionClientCloseNotifyMask);
	XFlush(display);
	return clipboard;
}

static void clipboard_transfer_free(struct clipboard_transfer *transfer)
{
	free(transfer->data);
	free(transfer);
}

void clipboard_free(struct clipboard *clipboard)
{
	if (!clipboard)
		return;
	screen_set_event_sink(clipboard->screen, NULL, NULL);
	for (int i = 0; i < CLIPBOARD_SELECTIONS; i++)
		free(clipboard->owned[i].data);
	while (clipboard->transfers) {
		struct clipboard_transfer *next = clipboard->transfers->next;
		clipboard_transfer_free(clipboard->transfers);
		clipboard->transfers = next;
	}
	free(clipboard->reading.data);
	XDestroyWindow(clipboard->display, clipboard->window);
	XDestroyWindow(clipboard->display, clipboard->reader);
	free(clipboard->queue);
	close(clipboard->event_fd);
	pthread_mutex_destroy(&clipboard->lock);
	free(clipboard);
}

int clipboard_fd(const struct clipboard *clipboard)
{
	return clipboard->event_fd;
}

bool clipboard_owns(const struct clipboard *clipboard)
{
	for (int i = 0; i < CLIPBOARD_SELECTIONS; i++)
		if (clipboard->owned[i].owned)
			return true;
	return false;
}

/* ---- answering a paste ---- */

/* Text as Latin-1 (STRING), or NULL when a character does not fit. */
static uint8_t *clipboard_latin1(const uint8_t *text, size_t length, size_t *out_length)
{
	uint8_t *out = xmalloc(length + 1);
	size_t n = 0;
	for (size_t i = 0; i < length; i++) {
		if (text[i] < 0x80) {
			out[n++] = text[i];
		} else if ((text[i] == 0xc2 || text[i] == 0xc3) && i + 1 < length) {
			out[n++] = (uint8_t)(((text[i] & 0x03) << 6) | (text[i + 1] & 0x3f));
			i++;
		} else {
			free(out);
			return NULL;
		}
	}
	*out_length = n;
	return out;
}

static void clipboard_notify(struct clipboard *clipboard, const XSelectionRequestEvent *request,
			     Atom property)
{
	XEvent reply = {.xselection = {
				.type = SelectionNotify,
				.display = request->display,
				.requestor = request->requestor,
				.selection = request->selection,
				.target = request->target,
				.property = property,
				.time = request->time,
			}};
	XSendEvent(clipboard->display, request->requestor, False, NoEventMask, &reply);
}

/* Starts an INCR transfer: the size goes first, the pieces as the
 * requestor deletes the property (clipboard_on_property). */
static void clipboard_send_incr(struct clipboard *clipboard, const XSelectionRequestEvent *request,
				Atom property, Atom type, const uint8_t *data, size_t length)
{
	struct clipboard_transfer *transfer = xcalloc(1, sizeof *transfer);
	transfer->requestor = request->requestor;
	transfer->property = property;
	transfer->type = type;
	transfer->data = xmalloc(length);
	memcpy(transfer->data, data, length);
	transfer->length = length;
	transfer->deadline_ms = clock_monotonic_ms() + CLIPBOARD_SEND_IDLE_MS;
	transfer->next = clipboard->transfers;
	clipboard->transfers = transfer;
	log_msg(LOG_LEVEL_DEBUG, "pasting %zu bytes by INCR", length);
	XSelectInput(clipboard->display, request->requestor, PropertyChangeMask);
	long size = (long)length;
	XChangeProperty(clipboard->display, request->requestor, property,
			clipboard->atoms[ATOM_INCR], 32, PropModeReplace,
			(const unsigned char *)&size, 1);
}

/* Puts `data` on the requestor's property, whole or by INCR. */
static void clipboard_put(struct clipboard *clipboard, const XSelectionRequestEvent *request,
			  Atom property, Atom type, const uint8_t *data, size_t length)
{
	if (length > clipboard->piece)
		clipboard_send_incr(clipboard, request, property, type, data, length);
	else
		XChangeProperty(clipboard->display, request->requestor, property, type, 8,
				PropModeReplace, data, (int)length);
}

static void clipboard_put_targets(struct clipboard *clipboard,
				  const XSelectionRequestEvent *request, Atom property,
				  const struct clipboard_owned *owned)
{
	const Atom *atoms = clipboard->atoms;
	Atom targets[8];
	int count = 0;
	targets[count++] = atoms[ATOM_TARGETS];
	targets[count++] = atoms[ATOM_TIMESTAMP];
	if (owned->kind == CLIPBOARD_IMAGE) {
		targets[count++] = atoms[ATOM_IMAGE_PNG];
	} else {
		targets[count++] = atoms[ATOM_UTF8_STRING];
		targets[count++] = atoms[ATOM_TEXT_PLAIN_UTF8];
		targets[count++] = atoms[ATOM_TEXT_PLAIN];
		targets[count++] = atoms[ATOM_TEXT];
		size_t unused;
		uint8_t *latin1 = clipboard_latin1(owned->data, owned->length, &unused);
		if (latin1)
			targets[count++] = XA_STRING;
		free(latin1);
	}
	XChangeProperty(clipboard->display, request->requestor, property, XA_ATOM, 32,
			PropModeReplace, (const unsigned char *)targets, count);
}

/* The property the value went on, or None when `target` is not offered. */
static Atom clipboard_convert(struct clipboard *clipboard, const XSelectionRequestEvent *request,
			      const struct clipboard_owned *owned)
{
	const Atom *atoms = clipboard->atoms;
	Atom target = request->target;
	/* An obsolete requestor names no property: the target is the property. */
	Atom property = request->property != None ? request->property : target;
	bool text = owned->kind == CLIPBOARD_TEXT;
	if (target == atoms[ATOM_TARGETS]) {
		clipboard_put_targets(clipboard, request, property, owned);
	} else if (target == atoms[ATOM_TIMESTAMP]) {
		long since = (long)owned->since;
		XChangeProperty(clipboard->display, request->requestor, property, XA_INTEGER, 32,
				PropModeReplace, (const unsigned char *)&since, 1);
	} else if (text && (target == atoms[ATOM_UTF8_STRING] || target == atoms[ATOM_TEXT])) {
		clipboard_put(clipboard, request, property, atoms[ATOM_UTF8_STRING], owned->data,
			      owned->length);
	} else if (text &&
		   (target == atoms[ATOM_TEXT_PLAIN_UTF8] || target == atoms[ATOM_TEXT_PLAIN])) {
		clipboard_put(clipboard, request, property, target, owned->data, owned->length);
	} else if (text && target == XA_STRING) {
		size_t length;
		uint8_t *latin1 = clipboard_latin1(owned->data, owned->length, &length);
		if (!latin1)
			return None;
		clipboard_put(clipboard, request, property, XA_STRING, latin1, length);
		free(latin1);
	} else if (!text && target == atoms[ATOM_IMAGE_PNG]) {
		clipboard_put(clipboard, request, property, target, owned->data, owned->length);
	} else {
		return None; /* MULTIPLE among them: optional, and not offered */
	}
	return property;
}

static void clipboard_on_request(struct clipboard *clipboard, const XSelectionRequestEvent *request)
{
	int index = clipboard_index(clipboard, request->selection);
	const struct clipboard_owned *owned = index >= 0 ? &clipboard->owned[index] : NULL;
	Atom property = None;
	/* A request from before boxd owned it is refused (ICCCM 2.2). */
	if (owned && owned->owned && request->owner == clipboard->window &&
	    (request->time == CurrentTime || request->time >= owned->since))
		property = clipboard_convert(clipboard, request, owned);
	clipboard_notify(clipboard, request, property);
	XFlush(clipboard->display);
}

static void clipboard_on_clear(struct clipboard *clipboard, const XSelectionClearEvent *event)
{
	int index = clipboard_index(clipboard, event->selection);
	if (index < 0 || event->window != clipboard->window)
		return;
	struct clipboard_owned *owned = &clipboard->owned[index];
	/* A clear older than boxd's latest take is about an earlier value. */
	if (!owned->owned || (event->time != CurrentTime && event->time < owned->since))
		return;
	log_msg(LOG_LEVEL_DEBUG, "another program took the %s selection", selection_names[index]);
	free(owned->data);
	*owned = (struct clipboard_owned){0};
}

/* The requestor took a piece (deleted the property): the next one, or the
 * empty one that ends the transfer. */
static void clipboard_on_property(struct clipboard *clipboard, const XPropertyEvent *event)
{
	if (event->window == clipboard->window) {
		if (event->atom == clipboard->atoms[ATOM_CLOCK] &&
		    event->state == PropertyNewValue && clipboard->clock_wanted) {
			clipboard->clock = event->time;
			clipboard->clock_wanted = false;
		}
		return;
	}
	if (event->window == clipboard->reader) {
		clipboard_read_on_property(clipboard, event);
		return;
	}
	if (event->state != PropertyDelete)
		return;
	struct clipboard_transfer **link = &clipboard->transfers;
	while (*link && ((*link)->requestor != event->window || (*link)->property != event->atom))
		link = &(*link)->next;
	struct clipboard_transfer *transfer = *link;
	if (!transfer)
		return;
	size_t left = transfer->length - transfer->sent;
	size_t n = left < clipboard->piece ? left : clipboard->piece;
	XChangeProperty(clipboard->display, transfer->requestor, transfer->property, transfer->type,
			8, PropModeReplace, transfer->data + transfer->sent, (int)n);
	transfer->sent += n;
	transfer->finished = n == 0;
	transfer->deadline_ms = clock_monotonic_ms() + CLIPBOARD_SEND_IDLE_MS;
	XFlush(clipboard->display);
	if (transfer->finished) {
		/* Its window's events are no longer wanted, unless another
		 * transfer goes to it. */
		bool other = false;
		for (struct clipboard_transfer *t = clipboard->transfers; t; t = t->next)
			other |= t != transfer && t->requestor == transfer->requestor;
		if (!other)
			XSelectInput(clipboard->display, transfer->requestor, NoEventMask);
		*link = transfer->next;
		clipboard_transfer_free(transfer);
	}
}

static void clipboard_on_owner_change(struct clipboard *clipboard, const XEvent *event)
{
	const XFixesSelectionNotifyEvent *notify = (const XFixesSelectionNotifyEvent *)event;
	int index = clipboard_index(clipboard, notify->selection);
	if (index >= 0 && clipboard->changed)
		clipboard->changed(clipboard->changed_ctx, selection_names[index]);
}

static void clipboard_dispatch(struct clipboard *clipboard, const XEvent *event)
{
	switch (event->type) {
	case SelectionRequest: clipboard_on_request(clipboard, &event->xselectionrequest); break;
	case SelectionClear: clipboard_on_clear(clipboard, &event->xselectionclear); break;
	case SelectionNotify: clipboard_read_on_notify(clipboard, &event->xselection); break;
	case PropertyNotify: clipboard_on_property(clipboard, &event->xproperty); break;
	default:
		if (clipboard->xfixes_event_base >= 0 &&
		    event->type == clipboard->xfixes_event_base + XFixesSelectionNotify)
			clipboard_on_owner_change(clipboard, event);
		break;
	}
}

/* Drops transfers whose requestor stopped taking pieces. */
static void clipboard_expire(struct clipboard *clipboard)
{
	int64_t now = clock_monotonic_ms();
	struct clipboard_transfer **link = &clipboard->transfers;
	while (*link) {
		struct clipboard_transfer *transfer = *link;
		if (transfer->deadline_ms > now) {
			link = &transfer->next;
			continue;
		}
		log_msg(LOG_LEVEL_DEBUG, "a paste stalled after %zu of %zu bytes; dropped",
			transfer->sent, transfer->length);
		*link = transfer->next;
		clipboard_transfer_free(transfer);
	}
}

bool clipboard_process(struct clipboard *clipboard)
{
	uint64_t count;
	ssize_t unused = read(clipboard->event_fd, &count, sizeof count);
	(void)unused;
	bool handled = false;
	for (;; handled = true) {
		XEvent event;
		pthread_mutex_lock(&clipboard->lock);
		bool any = clipboard->queued > 0;
		if (any) {
			event = clipboard->queue[0];
			memmove(clipboard->queue, clipboard->queue + 1,
				--clipboard->queued * sizeof *clipboard->queue);
		}
		pthread_mutex_unlock(&clipboard->lock);
		if (!any)
			break;
		clipboard_dispatch(clipboard, &event);
	}
	clipboard_expire(clipboard);
	return handled;
}

int clipboard_due_ms(const struct clipboard *clipboard)
{
	int64_t soonest = -1, now = clock_monotonic_ms();
	for (const struct clipboard_transfer *t = clipboard->transfers; t; t = t->next)
		if (soonest < 0 || t->deadline_ms < soonest)
			soonest = t->deadline_ms;
	if (soonest < 0)
		return -1;
	return soonest <= now ? 0 : (int)(soonest - now);
}

bool clipboard_wait(struct clipboard *clipboard, bool (*ready)(const struct clipboard *),
		    int64_t deadline_ms)
{
	for (;;) {
		/* Events another thread's round trips left in Xlib's queue, and
		 * what the socket holds, go through the sink. */
		screen_handle_events(clipboard->screen);
		bool handled = clipboard_process(clipboard);
		if (ready(clipboard))
			return true;
		/* Its requests may have read more events into Xlib's queue. */
		if (handled)
			continue;
		int64_t left = deadline_ms - clock_monotonic_ms();
		if (left <= 0)
			return false;
		struct pollfd fds[2] = {
			{.fd = ConnectionNumber(clipboard->display), .events = POLLIN},
			{.fd = clipboard->event_fd, .events = POLLIN},
		};
		/* A recording's thread may read our answer into Xlib's queue
		 * during a round trip of its own, leaving the socket quiet:
		 * look again every 10 ms. */
		if (poll(fds, 2, left < 10 ? (int)left : 10) < 0 && errno != EINTR)
			return false;
	}
}

static bool clipboard_clock_ready(const struct clipboard *clipboard)
{
	return !clipboard->clock_wanted;
}

bool clipboard_server_time(struct clipboard *clipboard, Time *time)
{
	/* Appending nothing to a property is a change the server stamps. */
	clipboard->clock_wanted = true;
	XChangeProperty(clipboard->display, clipboard->window, clipboard->atoms[ATOM_CLOCK],
			XA_INTEGER, 32, PropModeAppend, NULL, 0);
	XFlush(clipboard->display);
	if (!clipboard_wait(clipboard, clipboard_clock_ready,
			    clock_monotonic_ms() + CLIPBOARD_WAIT_MS)) {
		clipboard->clock_wanted = false;
		return false;
	}
	*time = clipboard->clock;
	return true;
}

bool clipboard_set(struct clipboard *clipboard, enum clipboard_selection selection,
		   enum clipboard_kind kind, const void *data, size_t length, enum failure *failure,
		   char *error, size_t error_size)
{
	Time now;
	*failure = FAILURE_INTERNAL;
	if (!clipboard_server_time(clipboard, &now))
		return text_fail(error, error_size,
				 "the X server did not say its time within %d ms",
				 CLIPBOARD_WAIT_MS);
	Atom atom = clipboard->selections[selection];
	XSetSelectionOwner(clipboard->display, atom, clipboard->window, now);
	if (XGetSelectionOwner(clipboard->display, atom) != clipboard->window)
		return text_fail(error, error_size,
				 "the X server did not give boxd the %s selection",
				 selection_names[selection]);
	struct clipboard_owned *owned = &clipboard->owned[selection];
	free(owned->data);
	*owned = (struct clipboard_owned){.owned = true,
					  .since = now,
					  .kind = kind,
					  .data = xmalloc(length ? length : 1),
					  .length = length};
	memcpy(owned->data, data, length);
	/* Without XFixes no report comes: boxd's own take is a change too. */
	if (clipboard->xfixes_event_base < 0 && clipboard->changed)
		clipboard->changed(clipboard->changed_ctx, selection_names[selection]);
	return true;
}
