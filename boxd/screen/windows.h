/* windows.h: the display's top-level windows as a person sees them, and
 * focusing one, for the screen worker (GET /v1/screen/windows,
 * POST /v1/screen/windows/{id}/focus; docs/screen.md, "Windows").
 *
 * A box may or may not run a window manager. The root's children are read
 * in stacking order (bottom to top); each one's client window (the one the
 * application made, whose title and class it set) is the child itself when
 * no window manager runs or it does not reparent, else the descendant that
 * carries WM_STATE, as xprop and xdotool find it. Listed: client windows an
 * agent can act on: InputOutput, not override-redirect (menus, tooltips),
 * and viewable, or minimised by a window manager (WM_STATE Iconic, listed
 * with visible false). Unmapped helper windows are left out.
 *
 * The requests go through XCB on the worker's one connection, each round
 * sent whole before its replies are read, so a listing costs a few round
 * trips whatever the number of windows (three without a window manager). */
#ifndef BOXD_WINDOWS_H
#define BOXD_WINDOWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <X11/Xlib.h>

#include "failure.h"

struct window_info {
	uint32_t id;       /* the client window */
	uint32_t top;      /* its root child: the window manager's frame, or itself */
	char *title;       /* UTF-8 (_NET_WM_NAME, else WM_NAME); "" when none */
	char *class_name;  /* WM_CLASS's second string, the class; "" when none */
	long pid;          /* _NET_WM_PID; -1 when not set */
	int x, y;          /* root coordinates of its top-left corner, outside its border (as
		   * XGetGeometry, xdotool and xwininfo give it) */
	int width, height; /* inside the border */
	bool focused;      /* where typed keys go (see windows_list) */
	bool visible;      /* viewable: mapped, and so are its ancestors */
};

struct window_list {
	struct window_info *items; /* bottom to top */
	size_t count;
	bool manager; /* a window manager runs (it redirects the root's children) */
	bool ewmh;    /* and says so by EWMH (_NET_SUPPORTING_WM_CHECK) */
};

struct windows;

/* For the worker's connection; interns the atoms it reads, once. */
struct windows *windows_new(Display *display);
void windows_free(struct windows *windows);

/* Lists the windows. `focused` is _NET_ACTIVE_WINDOW when an EWMH window
 * manager sets it; else the top-level holding the input focus (with the
 * focus on the root or PointerRoot, the one under the pointer, which is
 * where keys then go). Windows that vanish while being read are left out.
 * Ends the worker (SCREEN_EXIT_X_LOST) when the server has gone. */
void windows_list(struct windows *windows, struct window_list *list);
void window_list_clear(struct window_list *list);

/* Raises window `id` (a client window as listed) and gives it the input
 * focus; with an EWMH window manager, asks it to (_NET_ACTIVE_WINDOW) and
 * waits up to a second for it. On success `list` holds the listing after
 * it and `*index` the window's entry. Else false, with the failure and a
 * sentence: FAILURE_NOT_FOUND (not a listed window), FAILURE_CONFLICT (not
 * shown, and nothing could show it). */
bool windows_focus(struct windows *windows, uint32_t id, struct window_list *list, size_t *index,
		   enum failure *failure, char *error, size_t error_size);

#endif
