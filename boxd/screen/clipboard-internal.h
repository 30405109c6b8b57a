/* clipboard-internal.h: the state clipboard.c (owning, serving, the event
 * queue) and clipboard-read.c (reading another program's selection) share.
 * Internal to those two files. */
#ifndef BOXD_SCREEN_CLIPBOARD_INTERNAL_H
#define BOXD_SCREEN_CLIPBOARD_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <X11/Xlib.h>

#include "clipboard.h"

enum clipboard_atom {
	ATOM_CLIPBOARD,
	ATOM_TARGETS,
	ATOM_TIMESTAMP,
	ATOM_UTF8_STRING,
	ATOM_TEXT,
	ATOM_TEXT_PLAIN_UTF8, /* text/plain;charset=utf-8 */
	ATOM_TEXT_PLAIN,      /* text/plain */
	ATOM_IMAGE_PNG,
	ATOM_INCR,
	ATOM_PROPERTY, /* where the owner of a selection being read puts it */
	ATOM_CLOCK,    /* appended to, to learn the server's time */
	ATOM_COUNT
};

/* A selection boxd owns: since when (the server's time) and its value. */
struct clipboard_owned {
	bool owned;
	Time since;
	enum clipboard_kind kind;
	uint8_t *data;
	size_t length;
};

/* A value going to a pasting program piece by piece (INCR). */
struct clipboard_transfer {
	Window requestor;
	Atom property, type;
	uint8_t *data; /* a copy: boxd may own a new value meanwhile */
	size_t length, sent;
	bool finished; /* the last, empty piece is written */
	int64_t deadline_ms;
	struct clipboard_transfer *next;
};

/* A read of another program's selection in progress (clipboard-read.c). */
struct clipboard_reading {
	bool active;
	Atom selection, target;
	bool answered; /* SelectionNotify came (or the owner refused) */
	bool refused;  /* property None: the owner cannot convert to target */
	bool incr;     /* pieces follow, ended by an empty one */
	bool done;
	bool too_large;
	Atom type;
	int format;
	uint8_t *data;
	size_t length, capacity;
	/* Progress, so a wait's deadline runs from the last answer. */
	unsigned pieces;
	bool seen_answered;
	unsigned seen_pieces;
};

struct clipboard {
	struct screen *screen;
	Display *display;
	Window window; /* owns the selections, learns the server's time */
	/* Where other programs' values are converted to: a window of its own,
	 * replaced when a read is abandoned mid-INCR, so that the owner still
	 * sending pieces writes to a window that is gone, never into the next
	 * read. */
	Window reader;
	Atom atoms[ATOM_COUNT];
	Atom selections[CLIPBOARD_SELECTIONS];
	int xfixes_event_base; /* -1: no XFixes */
	size_t piece;          /* the most bytes one property change carries */
	clipboard_changed_fn changed;
	void *changed_ctx;
	/* The queue the sink fills from any thread; event_fd says it is not empty. */
	pthread_mutex_t lock;
	XEvent *queue;
	size_t queued, queue_capacity;
	int event_fd;
	struct clipboard_owned owned[CLIPBOARD_SELECTIONS];
	struct clipboard_transfer *transfers;
	struct clipboard_reading reading;
	/* The server's time, learned from a PropertyNotify on ATOM_CLOCK. */
	bool clock_wanted;
	Time clock;
};

/* clipboard.c: waits (at most until `deadline_ms`, monotonic) until
 * `ready(clipboard)`, handling every event meanwhile. */
bool clipboard_wait(struct clipboard *clipboard, bool (*ready)(const struct clipboard *),
		    int64_t deadline_ms);
/* The server's current time (a round trip through a property change). */
bool clipboard_server_time(struct clipboard *clipboard, Time *time);

/* A 1x1 unmapped window with PropertyChangeMask. */
Window clipboard_window_new(Display *display);

/* clipboard-read.c: events that concern a read in progress. */
void clipboard_read_on_notify(struct clipboard *clipboard, const XSelectionEvent *event);
void clipboard_read_on_property(struct clipboard *clipboard, const XPropertyEvent *event);

#endif
