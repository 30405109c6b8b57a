/* clipboard.h: the screen worker's part in the X selections CLIPBOARD and
 * PRIMARY: owning one with boxd's text or PNG and answering the programs
 * that paste it (clipboard.c), reading the one another program owns
 * (clipboard-read.c), and telling when either changes owner.
 *
 * Its events (SelectionRequest, SelectionClear, SelectionNotify,
 * PropertyNotify, XFixes selection reports) come off the worker's one X
 * connection in whichever thread drains it (screen_set_event_sink): the
 * sink queues a copy and makes clipboard_fd() readable, and the main thread
 * handles the queue in clipboard_process(). Everything else here runs on
 * the main thread only. Large values go by the INCR protocol both ways, in
 * pieces of the server's maximum request size. Internal to boxd-screen. */
#ifndef BOXD_SCREEN_CLIPBOARD_H
#define BOXD_SCREEN_CLIPBOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "failure.h"
#include "screen.h"

/* The two selections boxd reads and owns. */
enum clipboard_selection { CLIPBOARD_CLIPBOARD, CLIPBOARD_PRIMARY, CLIPBOARD_SELECTIONS };

/* What a selection holds, as far as boxd reads it. */
enum clipboard_kind {
	CLIPBOARD_TEXT,  /* UTF-8 text (converted from Latin-1 for a STRING-only owner) */
	CLIPBOARD_IMAGE, /* a PNG file */
	CLIPBOARD_EMPTY, /* no owner */
	CLIPBOARD_OTHER, /* an owner offering neither text nor PNG */
};

/* A value read: `data` (malloc'd, the caller frees) of `length` bytes for
 * text and images; for CLIPBOARD_OTHER, `targets` names what the owner
 * offers, comma-separated (malloc'd too; NULL otherwise). */
struct clipboard_content {
	enum clipboard_kind kind;
	uint8_t *data;
	size_t length;
	char *targets;
};

/* A read gives up after this long without the owner's answer, and a
 * pasting program that stops taking an INCR transfer is dropped after
 * this long (a program that died mid-paste). */
#define CLIPBOARD_WAIT_MS 2000
#define CLIPBOARD_SEND_IDLE_MS 10000
/* A value read from another program larger than this is refused. */
#define CLIPBOARD_MAX_READ (64u << 20)

struct clipboard;

/* Told each time the owner of a selection changes (another program took
 * it, its owner went away, or boxd took it): `selection` is "clipboard" or
 * "primary". Runs on the main thread. */
typedef void (*clipboard_changed_fn)(void *ctx, const char *selection);

/* Sets up on `screen`: a small window of the worker's own, the atoms, the
 * event sink, and the XFixes owner reports when the server has XFixes. */
struct clipboard *clipboard_new(struct screen *screen, clipboard_changed_fn changed, void *ctx);
void clipboard_free(struct clipboard *clipboard);

/* Readable when events wait in the queue: poll it, then clipboard_process. */
int clipboard_fd(const struct clipboard *clipboard);
/* Handles the queued events (answers pastes, goes on with INCR transfers,
 * lets a selection go, reports owner changes) and drops transfers that
 * stalled. True when it handled any: then Xlib may have read more events
 * into its own queue while writing the answers (a large piece blocks the
 * socket, and Xlib reads meanwhile), which leaves the socket quiet, so the
 * caller drains the connection again (screen_handle_events) before it
 * sleeps on the socket. */
bool clipboard_process(struct clipboard *clipboard);
/* Milliseconds until a stalled transfer is due to be dropped (-1: none). */
int clipboard_due_ms(const struct clipboard *clipboard);
/* True while boxd owns a selection: the worker must not retire then, or
 * the value would be gone. */
bool clipboard_owns(const struct clipboard *clipboard);

/* "clipboard" or "primary" to the enum; false for anything else. */
bool clipboard_selection_from_name(const char *name, enum clipboard_selection *selection);

/* Makes boxd own `selection` with a copy of `data`: text (valid UTF-8, the
 * caller checked) or a PNG. False with the failure and a sentence when the
 * server would not give it. */
bool clipboard_set(struct clipboard *clipboard, enum clipboard_selection selection,
		   enum clipboard_kind kind, const void *data, size_t length, enum failure *failure,
		   char *error, size_t error_size);

/* clipboard-read.c: what `selection` holds: boxd's own copy while it owns
 * it, else asked of its owner (TARGETS first; text preferred, a PNG when
 * there is no text), waiting at most CLIPBOARD_WAIT_MS for each answer.
 * False with the failure and a sentence (the owner did not answer, or sent
 * too much). */
bool clipboard_get(struct clipboard *clipboard, enum clipboard_selection selection,
		   struct clipboard_content *content, enum failure *failure, char *error,
		   size_t error_size);

#endif
