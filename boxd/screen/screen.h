/* screen.h: the screen worker's X11 connection and its grabs.
 *
 * One `struct screen` is the worker's one connection to the X server, opened
 * once and kept for the worker's life (so any number of screenshots leaves the
 * server's client count unchanged). Xlib is initialised for threads, so the
 * recording thread grabs through the same connection with its own grabber.
 *
 * When the server goes away, Xlib's I/O error exit handler ends the worker
 * (exit status SCREEN_EXIT_X_LOST); boxd notices and starts a new worker, which
 * waits for the server to come back. Nothing here ever calls exit() on an
 * ordinary protocol error: those are recorded and reported as values. */
#ifndef BOXD_SCREEN_H
#define BOXD_SCREEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <X11/Xlib.h>

#include "screen-protocol.h" /* SCREEN_EXIT_X_LOST */

struct screen;
struct screen_grabber;

/* A grabbed picture: 32 bits a pixel, `layout` tells the byte order. */
enum screen_layout { SCREEN_LAYOUT_BGR0, SCREEN_LAYOUT_RGB0 };

struct screen_image {
	uint8_t *pixels; /* the top-left pixel of the picture */
	int width, height;
	int stride; /* bytes from one row to the next */
	enum screen_layout layout;
};

/* Opens the display. On failure returns NULL with a sentence in `error`. */
struct screen *screen_open(const char *display_name, char *error, size_t error_size);
void screen_close(struct screen *screen);
Display *screen_display(struct screen *screen);
/* The root window's current size (follows RandR changes, see screen_handle_events). */
int screen_width(struct screen *screen);
int screen_height(struct screen *screen);
/* Handles whatever the server sent (size changes, keyboard mapping changes).
 * Call when the connection's fd is readable. True when it handled damage
 * (the generation moved on), so the caller can tell a live view. */
bool screen_handle_events(struct screen *screen);

/* Events screen.c does not handle itself (selections, property changes,
 * XFixes selection reports) go to `sink`, from whichever thread drains the
 * connection (the main thread, a recording's or a live view's), with the
 * display locked: the sink copies the event and wakes its owner, and makes
 * no X request. Set once, before other threads use the connection. */
typedef void (*screen_event_sink)(void *ctx, const XEvent *event);
void screen_set_event_sink(struct screen *screen, screen_event_sink sink, void *ctx);
/* XFixes's first event number, or -1 when the server has no XFixes. */
int screen_xfixes_event_base(const struct screen *screen);

/* What changed on the screen, from the DAMAGE extension. The generation moves
 * on whenever anything is drawn. A caller reads it BEFORE it grabs, and later
 * reads it again: the same number means the grab still shows the screen
 * (the pointer's sprite excepted: it is not drawing). Without DAMAGE every
 * read gives a new number, so callers always grab. Any thread may ask; each
 * read costs one round trip to the server. */
uint64_t screen_damage_generation(struct screen *screen);
bool screen_has_damage(const struct screen *screen);

/* A grabber holds its own shared-memory image (XShm when the server offers
 * it, else plain XGetImage). One per thread that grabs. */
struct screen_grabber *screen_grabber_new(struct screen *screen);
void screen_grabber_free(struct screen_grabber *grabber);
/* Grabs the whole root window into `image` (valid until the next grab with
 * this grabber). Returns false with a sentence in `error`. */
bool screen_grab(struct screen_grabber *grabber, struct screen_image *image, char *error,
		 size_t error_size);
/* True when the grabber uses XShm (for diagnostics and benchmarks). */
bool screen_grabber_uses_shm(const struct screen_grabber *grabber);

/* The pointer's cursor as one read gives it (screen_look): where it is
 * and which sprite it shows, and its picture to draw. Lets a caller key a
 * cache on the same reading it draws. */
struct screen_cursor;
void screen_cursor_free(struct screen_cursor *cursor);
/* The hot spot's position and the sprite's serial (a new number whenever
 * the sprite changes). */
void screen_cursor_where(const struct screen_cursor *cursor, int *x, int *y, unsigned long *serial);
void screen_cursor_draw(const struct screen_cursor *cursor, struct screen_image *image,
			int origin_x, int origin_y);

/* The damage generation and the pointer's cursor (NULL without XFixes) as
 * one reading, in one round trip instead of two: what a grab that follows
 * is compared with. */
uint64_t screen_look(struct screen *screen, struct screen_cursor **cursor);

#endif
