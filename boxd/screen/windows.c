/* windows.c: the top-level windows and their focus (windows.h), in XCB
 * rounds: every request of a round is sent before any reply is read. */
#include "windows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <X11/Xlib-xcb.h>
#include <X11/Xutil.h>
#include <xcb/xcb.h>

#include "log.h"
#include "screen-protocol.h"
#include "utf8.h"
#include "xalloc.h"

/* Titles longer than this many bytes are cut (at a character's end). */
#define WINDOWS_TITLE_MAX 4096
/* How deep below a frame the client is looked for (frames nest 1 or 2). */
#define WINDOWS_FRAME_DEPTH 3
/* An EWMH window manager asked to activate a window has this long. */
#define WINDOWS_MANAGER_WAIT_MS 1000
/* Looking again this often while waiting for it. */
#define WINDOWS_POLL_MS 30

enum {
	ATOM_WM_STATE,
	ATOM_NET_WM_NAME,
	ATOM_UTF8_STRING,
	ATOM_NET_WM_PID,
	ATOM_NET_ACTIVE_WINDOW,
	ATOM_NET_SUPPORTING_WM_CHECK,
	ATOM_COMPOUND_TEXT,
	ATOM_COUNT
};

static const char *const atom_names[ATOM_COUNT] = {
	"WM_STATE",      "_NET_WM_NAME",       "UTF8_STRING",
	"_NET_WM_PID",   "_NET_ACTIVE_WINDOW", "_NET_SUPPORTING_WM_CHECK",
	"COMPOUND_TEXT",
};

/* WM_STATE's states (ICCCM 4.1.3.1). */
#define WM_STATE_NORMAL 1
#define WM_STATE_ICONIC 3

struct windows {
	Display *display; /* Xlib's, for COMPOUND_TEXT's conversion */
	xcb_connection_t *connection;
	xcb_window_t root;
	xcb_atom_t atoms[ATOM_COUNT];
};

/* A root child being read: its client, once found. */
struct candidate {
	xcb_window_t top, client;
	bool viewable;
	int state; /* the client's WM_STATE, -1: none */
};

/* The server went away mid-listing: the worker ends as on any lost
 * connection (screen.c), and boxd answers display_unavailable. */
static void windows_check_connection(struct windows *windows)
{
	if (xcb_connection_has_error(windows->connection)) {
		log_msg(LOG_LEVEL_WARNING, "the X server went away");
		_exit(SCREEN_EXIT_X_LOST);
	}
}

struct windows *windows_new(Display *display)
{
	struct windows *windows = xcalloc(1, sizeof *windows);
	windows->display = display;
	windows->connection = XGetXCBConnection(display);
	windows->root = (xcb_window_t)DefaultRootWindow(display);
	xcb_intern_atom_cookie_t cookies[ATOM_COUNT];
	for (int i = 0; i < ATOM_COUNT; i++)
		cookies[i] = xcb_intern_atom(windows->connection, 0,
					     (uint16_t)strlen(atom_names[i]), atom_names[i]);
	for (int i = 0; i < ATOM_COUNT; i++) {
		xcb_intern_atom_reply_t *reply =
			xcb_intern_atom_reply(windows->connection, cookies[i], NULL);
		windows->atoms[i] = reply ? reply->atom : XCB_ATOM_NONE;
		free(reply);
	}
	return windows;
}

void windows_free(struct windows *windows)
{
	free(windows);
}

void window_list_clear(struct window_list *list)
{
	for (size_t i = 0; i < list->count; i++) {
		free(list->items[i].title);
		free(list->items[i].class_name);
	}
	free(list->items);
	*list = (struct window_list){0};
}

/* ---- reading properties ---- */

static xcb_get_property_cookie_t windows_ask(struct windows *windows, xcb_window_t window,
					     xcb_atom_t property, xcb_atom_t type, uint32_t longs)
{
	return xcb_get_property(windows->connection, 0, window, property, type, 0, longs);
}

/* The reply's value when it has the `type` (any type: XCB_ATOM_ANY) and
 * `format`; NULL otherwise. Frees nothing. */
static const void *windows_value(const xcb_get_property_reply_t *reply, xcb_atom_t type, int format,
				 int *length)
{
	if (!reply || reply->type == XCB_ATOM_NONE || reply->format != format ||
	    (type != XCB_ATOM_ANY && reply->type != type))
		return NULL;
	*length = xcb_get_property_value_length(reply);
	return *length > 0 ? xcb_get_property_value(reply) : NULL;
}

/* A window id or a cardinal (the first 32-bit value), or `fallback`. */
static uint32_t windows_cardinal(xcb_get_property_reply_t *reply, xcb_atom_t type,
				 uint32_t fallback)
{
	int length;
	const uint32_t *value = windows_value(reply, type, 32, &length);
	uint32_t result = value && length >= 4 ? value[0] : fallback;
	free(reply);
	return result;
}

/* Latin-1 (a STRING property) as UTF-8. */
static char *windows_latin1(const uint8_t *text, int length)
{
	char *utf8 = xmalloc((size_t)length * 2 + 1);
	size_t used = 0;
	for (int i = 0; i < length; i++) {
		if (text[i] < 0x80) {
			utf8[used++] = (char)text[i];
		} else {
			utf8[used++] = (char)(0xc0 | (text[i] >> 6));
			utf8[used++] = (char)(0x80 | (text[i] & 0x3f));
		}
	}
	utf8[used] = '\0';
	char *clean = utf8_sanitize(utf8, used, NULL); /* NULs too */
	free(utf8);
	return clean;
}

/* COMPOUND_TEXT (ISO 2022: what xterm and Xt set WM_NAME to for text
 * beyond Latin-1 outside a UTF-8 locale) as UTF-8, through Xlib's
 * converter; NULL when it cannot convert. */
static char *windows_compound(struct windows *windows, const char *value, int length)
{
	XTextProperty property = {
		.value = (unsigned char *)value,
		.encoding = windows->atoms[ATOM_COMPOUND_TEXT],
		.format = 8,
		.nitems = (unsigned long)length,
	};
	char **list = NULL;
	int count = 0;
	if (Xutf8TextPropertyToTextList(windows->display, &property, &list, &count) < Success ||
	    !list)
		return NULL;
	size_t total = 1;
	for (int i = 0; i < count; i++)
		total += strlen(list[i]);
	char *joined = xcalloc(1, total);
	for (int i = 0; i < count; i++)
		strcat(joined, list[i]);
	XFreeStringList(list);
	char *clean = utf8_sanitize(joined, strlen(joined), NULL);
	free(joined);
	return clean;
}

/* A name property's text as UTF-8, NULL when the reply holds none. STRING
 * is Latin-1, COMPOUND_TEXT converted; UTF8_STRING and anything else are
 * taken as UTF-8, invalid bytes becoming U+FFFD. */
static char *windows_text(struct windows *windows, const xcb_get_property_reply_t *reply)
{
	int length;
	const char *value = windows_value(reply, XCB_ATOM_ANY, 8, &length);
	if (!value)
		return NULL;
	if (reply->type == XCB_ATOM_STRING)
		return windows_latin1((const uint8_t *)value, length);
	char *converted = reply->type == windows->atoms[ATOM_COMPOUND_TEXT]
				  ? windows_compound(windows, value, length)
				  : NULL;
	if (converted)
		return converted;
	size_t kept = (size_t)length;
	if (reply->bytes_after > 0) /* cut: do not end inside a character */
		kept = utf8_prefix_length(value, kept);
	return utf8_sanitize(value, kept, NULL);
}

/* WM_CLASS is "instance\0class\0": the class. */
static char *windows_class(const xcb_get_property_reply_t *reply)
{
	int length;
	const char *value = windows_value(reply, XCB_ATOM_STRING, 8, &length);
	if (!value)
		return xstrdup("");
	const char *end = memchr(value, '\0', (size_t)length);
	if (!end)
		return xstrdup("");
	const char *class_name = end + 1;
	size_t rest = (size_t)(value + length - class_name);
	const char *stop = memchr(class_name, '\0', rest);
	return windows_latin1((const uint8_t *)class_name,
			      (int)(stop ? (size_t)(stop - class_name) : rest));
}

/* ---- the rounds of a listing ---- */

/* What the first round tells. */
struct windows_start {
	xcb_window_t *children; /* the root's, bottom to top */
	int count;
	bool manager;
	xcb_window_t check;         /* _NET_SUPPORTING_WM_CHECK on the root, 0: none */
	xcb_window_t active;        /* _NET_ACTIVE_WINDOW on the root, 0: none */
	xcb_window_t focus;         /* the input focus */
	xcb_window_t under_pointer; /* the root child the pointer is in, 0: none */
};

static void windows_round_start(struct windows *windows, struct windows_start *start)
{
	xcb_connection_t *c = windows->connection;
	xcb_window_t root = windows->root;
	xcb_query_tree_cookie_t tree = xcb_query_tree(c, root);
	xcb_get_window_attributes_cookie_t root_attributes = xcb_get_window_attributes(c, root);
	xcb_get_input_focus_cookie_t focus = xcb_get_input_focus(c);
	xcb_query_pointer_cookie_t pointer = xcb_query_pointer(c, root);
	xcb_get_property_cookie_t active = windows_ask(
		windows, root, windows->atoms[ATOM_NET_ACTIVE_WINDOW], XCB_ATOM_WINDOW, 1);
	xcb_get_property_cookie_t check = windows_ask(
		windows, root, windows->atoms[ATOM_NET_SUPPORTING_WM_CHECK], XCB_ATOM_WINDOW, 1);

	*start = (struct windows_start){0};
	xcb_query_tree_reply_t *tree_reply = xcb_query_tree_reply(c, tree, NULL);
	if (tree_reply) {
		start->count = xcb_query_tree_children_length(tree_reply);
		start->children = xmalloc(((size_t)start->count + 1) * sizeof(xcb_window_t));
		memcpy(start->children, xcb_query_tree_children(tree_reply),
		       (size_t)start->count * sizeof(xcb_window_t));
		free(tree_reply);
	}
	xcb_get_window_attributes_reply_t *attributes =
		xcb_get_window_attributes_reply(c, root_attributes, NULL);
	/* A window manager is who redirects the root's children's mapping. */
	start->manager =
		attributes && (attributes->all_event_masks & XCB_EVENT_MASK_SUBSTRUCTURE_REDIRECT);
	free(attributes);
	xcb_get_input_focus_reply_t *focus_reply = xcb_get_input_focus_reply(c, focus, NULL);
	start->focus = focus_reply ? focus_reply->focus : XCB_NONE;
	free(focus_reply);
	xcb_query_pointer_reply_t *pointer_reply = xcb_query_pointer_reply(c, pointer, NULL);
	start->under_pointer = pointer_reply ? pointer_reply->child : XCB_NONE;
	free(pointer_reply);
	start->active =
		windows_cardinal(xcb_get_property_reply(c, active, NULL), XCB_ATOM_WINDOW, 0);
	start->check = windows_cardinal(xcb_get_property_reply(c, check, NULL), XCB_ATOM_WINDOW, 0);
	windows_check_connection(windows);
}

/* The WM_STATE of a window from its reply (-1: none); frees the reply. */
static int windows_state(struct windows *windows, xcb_get_property_reply_t *reply)
{
	int length;
	const uint32_t *value = windows_value(reply, windows->atoms[ATOM_WM_STATE], 32, &length);
	int state = value && length >= 4 ? (int)value[0] : -1;
	free(reply);
	return state;
}

/* Round two: each root child's attributes (and WM_STATE under a window
 * manager); the EWMH check window's own check. Fills `candidates` with
 * the children an agent may act on; returns their number. */
static int windows_round_children(struct windows *windows, struct windows_start *start,
				  struct candidate *candidates, bool *ewmh)
{
	xcb_connection_t *c = windows->connection;
	int n = start->count;
	xcb_get_window_attributes_cookie_t *attributes = xcalloc((size_t)n + 1, sizeof *attributes);
	xcb_get_property_cookie_t *states = xcalloc((size_t)n + 1, sizeof *states);
	xcb_atom_t wm_state = windows->atoms[ATOM_WM_STATE];
	for (int i = 0; i < n; i++) {
		attributes[i] = xcb_get_window_attributes(c, start->children[i]);
		if (start->manager)
			states[i] = windows_ask(windows, start->children[i], wm_state, wm_state, 2);
	}
	xcb_get_property_cookie_t check = {0};
	if (start->check)
		check = windows_ask(windows, start->check,
				    windows->atoms[ATOM_NET_SUPPORTING_WM_CHECK], XCB_ATOM_WINDOW,
				    1);
	int kept = 0;
	for (int i = 0; i < n; i++) {
		xcb_get_window_attributes_reply_t *reply =
			xcb_get_window_attributes_reply(c, attributes[i], NULL);
		int state =
			start->manager
				? windows_state(windows, xcb_get_property_reply(c, states[i], NULL))
				: -1;
		bool usable = reply && reply->_class == XCB_WINDOW_CLASS_INPUT_OUTPUT &&
			      !reply->override_redirect;
		if (usable)
			candidates[kept++] = (struct candidate){
				.top = start->children[i],
				.client = state >= 0 || !start->manager ? start->children[i] : 0,
				.viewable = reply->map_state == XCB_MAP_STATE_VIEWABLE,
				.state = state,
			};
		free(reply);
	}
	/* The check window names itself: a window manager that died leaves
	 * the root's property behind, naming a window that is gone. */
	xcb_window_t named = start->check ? windows_cardinal(xcb_get_property_reply(c, check, NULL),
							     XCB_ATOM_WINDOW, 0)
					  : 0;
	*ewmh = start->manager && start->check && named == start->check;
	free(attributes);
	free(states);
	windows_check_connection(windows);
	return kept;
}

/* A window below a frame, looked at for WM_STATE. */
struct below {
	int candidate; /* whose frame it is under */
	xcb_window_t window;
};

/* One level of the search below frames: the children of `level` (n), and
 * their WM_STATE, in two rounds. Sets the clients found; returns the next
 * level (the children without WM_STATE of frames still unresolved). */
static struct below *windows_descend(struct windows *windows, struct candidate *candidates,
				     struct below *level, int n, int *next_count)
{
	xcb_connection_t *c = windows->connection;
	xcb_query_tree_cookie_t *trees = xcalloc((size_t)n + 1, sizeof *trees);
	for (int i = 0; i < n; i++)
		trees[i] = xcb_query_tree(c, level[i].window);
	struct below *children = NULL;
	int count = 0, room = 0;
	for (int i = 0; i < n; i++) {
		xcb_query_tree_reply_t *reply = xcb_query_tree_reply(c, trees[i], NULL);
		int length = reply ? xcb_query_tree_children_length(reply) : 0;
		const xcb_window_t *ids = reply ? xcb_query_tree_children(reply) : NULL;
		for (int k = 0; k < length; k++) {
			if (count == room) {
				room = room ? room * 2 : 16;
				children = xrealloc(children, (size_t)room * sizeof *children);
			}
			children[count++] = (struct below){level[i].candidate, ids[k]};
		}
		free(reply);
	}
	free(trees);
	xcb_atom_t wm_state = windows->atoms[ATOM_WM_STATE];
	xcb_get_property_cookie_t *states = xcalloc((size_t)count + 1, sizeof *states);
	for (int i = 0; i < count; i++)
		states[i] = windows_ask(windows, children[i].window, wm_state, wm_state, 2);
	int next = 0;
	for (int i = 0; i < count; i++) {
		int state = windows_state(windows, xcb_get_property_reply(c, states[i], NULL));
		struct candidate *owner = &candidates[children[i].candidate];
		if (state >= 0 && !owner->client) {
			owner->client = children[i].window;
			owner->state = state;
		} else if (state < 0) {
			children[next++] = children[i];
		}
	}
	free(states);
	windows_check_connection(windows);
	/* Keep only what is below frames whose client is still unknown. */
	int kept = 0;
	for (int i = 0; i < next; i++)
		if (!candidates[children[i].candidate].client)
			children[kept++] = children[i];
	*next_count = kept;
	return children;
}

/* Under a window manager: the client below each frame that lacks WM_STATE.
 * A frame with none below it stays its own client (a window the manager
 * left alone). */
static void windows_find_clients(struct windows *windows, struct candidate *candidates, int n)
{
	struct below *level = xcalloc((size_t)n + 1, sizeof *level);
	int count = 0;
	for (int i = 0; i < n; i++)
		if (!candidates[i].client)
			level[count++] = (struct below){i, candidates[i].top};
	for (int depth = 0; depth < WINDOWS_FRAME_DEPTH && count > 0; depth++) {
		struct below *next = windows_descend(windows, candidates, level, count, &count);
		free(level);
		level = next;
	}
	free(level);
	for (int i = 0; i < n; i++)
		if (!candidates[i].client)
			candidates[i].client = candidates[i].top;
}

/* Whether a candidate is listed: viewable, or minimised by the manager. A
 * window the manager withdrew, or a frame left unmapped, is not. */
static bool windows_listed(const struct candidate *candidate)
{
	if (candidate->state == WM_STATE_ICONIC)
		return true;
	if (candidate->state >= 0 && candidate->state != WM_STATE_NORMAL)
		return false;
	return candidate->viewable;
}

/* The final round: each listed client's names, pid, geometry, position on
 * the root and (when inside a frame) its own map state. */
static void windows_round_clients(struct windows *windows, const struct candidate *candidates,
				  int n, struct window_list *list)
{
	xcb_connection_t *c = windows->connection;
	struct asked {
		xcb_get_property_cookie_t net_name, name, class_name, pid;
		xcb_get_geometry_cookie_t geometry;
		xcb_translate_coordinates_cookie_t where;
		xcb_get_window_attributes_cookie_t attributes;
	} *asked = xcalloc((size_t)n + 1, sizeof *asked);
	uint32_t title_longs = WINDOWS_TITLE_MAX / 4;
	for (int i = 0; i < n; i++) {
		xcb_window_t client = candidates[i].client;
		asked[i].net_name = windows_ask(windows, client, windows->atoms[ATOM_NET_WM_NAME],
						windows->atoms[ATOM_UTF8_STRING], title_longs);
		asked[i].name =
			windows_ask(windows, client, XCB_ATOM_WM_NAME, XCB_ATOM_ANY, title_longs);
		asked[i].class_name =
			windows_ask(windows, client, XCB_ATOM_WM_CLASS, XCB_ATOM_STRING, 256);
		asked[i].pid = windows_ask(windows, client, windows->atoms[ATOM_NET_WM_PID],
					   XCB_ATOM_CARDINAL, 1);
		asked[i].geometry = xcb_get_geometry(c, client);
		asked[i].where = xcb_translate_coordinates(c, client, windows->root, 0, 0);
		if (client != candidates[i].top)
			asked[i].attributes = xcb_get_window_attributes(c, client);
	}
	list->items = xcalloc((size_t)n + 1, sizeof *list->items);
	for (int i = 0; i < n; i++) {
		xcb_get_property_reply_t *net_name =
			xcb_get_property_reply(c, asked[i].net_name, NULL);
		xcb_get_property_reply_t *name = xcb_get_property_reply(c, asked[i].name, NULL);
		xcb_get_property_reply_t *class_name =
			xcb_get_property_reply(c, asked[i].class_name, NULL);
		xcb_get_property_reply_t *pid = xcb_get_property_reply(c, asked[i].pid, NULL);
		xcb_get_geometry_reply_t *geometry =
			xcb_get_geometry_reply(c, asked[i].geometry, NULL);
		xcb_translate_coordinates_reply_t *where =
			xcb_translate_coordinates_reply(c, asked[i].where, NULL);
		xcb_get_window_attributes_reply_t *attributes =
			candidates[i].client != candidates[i].top
				? xcb_get_window_attributes_reply(c, asked[i].attributes, NULL)
				: NULL;
		bool viewable =
			candidates[i].client != candidates[i].top
				? attributes && attributes->map_state == XCB_MAP_STATE_VIEWABLE
				: candidates[i].viewable;
		/* Gone since the last round: left out. */
		if (geometry && where) {
			char *title = windows_text(windows, net_name);
			if (!title)
				title = windows_text(windows, name);
			list->items[list->count++] = (struct window_info){
				.id = candidates[i].client,
				.top = candidates[i].top,
				.title = title ? title : xstrdup(""),
				.class_name = windows_class(class_name),
				.pid = (long)windows_cardinal(pid, XCB_ATOM_CARDINAL, 0),
				/* The border's outer corner, as X's own geometry,
				 * xdotool and xwininfo give it. */
				.x = where->dst_x - geometry->border_width,
				.y = where->dst_y - geometry->border_width,
				.width = geometry->width,
				.height = geometry->height,
				.visible = viewable,
			};
			pid = NULL; /* windows_cardinal freed it */
			if (list->items[list->count - 1].pid == 0)
				list->items[list->count - 1].pid = -1;
		}
		free(net_name);
		free(name);
		free(class_name);
		free(pid);
		free(geometry);
		free(where);
		free(attributes);
	}
	free(asked);
	windows_check_connection(windows);
}

/* The root child holding `window` (itself when it is one; 0 when it is
 * gone or is the root). A round per level; the focus is usually on a
 * top-level or a client one level down. */
static xcb_window_t windows_top_of(struct windows *windows, xcb_window_t window)
{
	for (int depth = 0; depth < 16 && window && window != windows->root; depth++) {
		xcb_query_tree_reply_t *reply = xcb_query_tree_reply(
			windows->connection, xcb_query_tree(windows->connection, window), NULL);
		if (!reply)
			return 0;
		xcb_window_t parent = reply->parent;
		free(reply);
		if (parent == windows->root)
			return window;
		window = parent;
	}
	return 0;
}

/* Marks the focused window (windows.h says which). */
static void windows_mark_focus(struct windows *windows, const struct windows_start *start,
			       struct window_list *list)
{
	if (list->ewmh && start->active) {
		for (size_t i = 0; i < list->count; i++)
			if (list->items[i].id == start->active ||
			    list->items[i].top == start->active)
				/* A minimised window takes no keys, whatever the
				 * property says while the manager moves on. */
				list->items[i].focused = list->items[i].visible;
		return;
	}
	xcb_window_t focus = start->focus;
	xcb_window_t top;
	if (focus == XCB_NONE)
		return;
	/* Keys go to the window under the pointer. */
	if (focus == XCB_INPUT_FOCUS_POINTER_ROOT || focus == windows->root)
		top = start->under_pointer;
	else
		top = windows_top_of(windows, focus);
	for (size_t i = 0; i < list->count; i++)
		if (top && list->items[i].top == top)
			list->items[i].focused = true;
}

void windows_list(struct windows *windows, struct window_list *list)
{
	struct windows_start start;
	*list = (struct window_list){0};
	windows_round_start(windows, &start);
	list->manager = start.manager;
	struct candidate *candidates = xcalloc((size_t)start.count + 1, sizeof *candidates);
	int n = windows_round_children(windows, &start, candidates, &list->ewmh);
	if (start.manager)
		windows_find_clients(windows, candidates, n);
	int listed = 0;
	for (int i = 0; i < n; i++)
		if (windows_listed(&candidates[i]))
			candidates[listed++] = candidates[i];
	windows_round_clients(windows, candidates, listed, list);
	windows_mark_focus(windows, &start, list);
	free(candidates);
	free(start.children);
}

/* ---- focus ---- */

static bool windows_find(const struct window_list *list, uint32_t id, size_t *index)
{
	for (size_t i = 0; i < list->count; i++)
		if (list->items[i].id == id) {
			*index = i;
			return true;
		}
	return false;
}

/* Asks an EWMH window manager to activate `window` (restoring it if
 * minimised, raising and focusing it): source 2, "a pager", which window
 * managers obey without their focus-stealing rules. */
static void windows_ask_manager(struct windows *windows, xcb_window_t window)
{
	xcb_client_message_event_t message = {
		.response_type = XCB_CLIENT_MESSAGE,
		.format = 32,
		.window = window,
		.type = windows->atoms[ATOM_NET_ACTIVE_WINDOW],
		.data.data32 = {2, XCB_CURRENT_TIME, 0, 0, 0},
	};
	xcb_send_event(windows->connection, 0, windows->root,
		       XCB_EVENT_MASK_SUBSTRUCTURE_REDIRECT | XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY,
		       (const char *)&message);
	xcb_flush(windows->connection);
}

/* Polls the listing until window `id` is shown, focused and still (a
 * window manager may animate a restore: openbox slides a window in from
 * its icon for some 200 ms, and an agent clicks where the answer says),
 * for at most WINDOWS_MANAGER_WAIT_MS; `list` holds the last listing. */
static bool windows_wait_focused(struct windows *windows, uint32_t id, struct window_list *list,
				 size_t *index)
{
	int last[4] = {-1, -1, -1, -1};
	for (int waited = 0;; waited += WINDOWS_POLL_MS) {
		windows_list(windows, list);
		if (windows_find(list, id, index) && list->items[*index].visible &&
		    list->items[*index].focused) {
			const struct window_info *window = &list->items[*index];
			int now[4] = {window->x, window->y, window->width, window->height};
			if (memcmp(now, last, sizeof now) == 0)
				return true;
			memcpy(last, now, sizeof now);
		}
		if (waited >= WINDOWS_MANAGER_WAIT_MS)
			return false;
		window_list_clear(list);
		nanosleep(&(struct timespec){0, WINDOWS_POLL_MS * 1000 * 1000}, NULL);
	}
}

/* Raises the window's top-level and gives the client the focus (reverting
 * to the parent, as xdotool does). False when the server refused (the
 * window went, or was unmapped meanwhile). */
static bool windows_raise_focus(struct windows *windows, xcb_window_t id, xcb_window_t top)
{
	xcb_connection_t *c = windows->connection;
	uint32_t above = XCB_STACK_MODE_ABOVE;
	xcb_void_cookie_t raise =
		xcb_configure_window_checked(c, top, XCB_CONFIG_WINDOW_STACK_MODE, &above);
	xcb_void_cookie_t focus =
		xcb_set_input_focus_checked(c, XCB_INPUT_FOCUS_PARENT, id, XCB_CURRENT_TIME);
	xcb_generic_error_t *raise_error = xcb_request_check(c, raise);
	xcb_generic_error_t *focus_error = xcb_request_check(c, focus);
	bool ok = !raise_error && !focus_error;
	free(raise_error);
	free(focus_error);
	windows_check_connection(windows);
	return ok;
}

bool windows_focus(struct windows *windows, uint32_t id, struct window_list *list, size_t *index,
		   enum failure *failure, char *error, size_t error_size)
{
	windows_list(windows, list);
	if (!windows_find(list, id, index)) {
		*failure = FAILURE_NOT_FOUND;
		snprintf(error, error_size, "no top-level window 0x%x on the display", id);
		window_list_clear(list);
		return false;
	}
	bool visible = list->items[*index].visible, ewmh = list->ewmh;
	xcb_window_t top = list->items[*index].top;
	if (!visible && !ewmh) {
		*failure = FAILURE_CONFLICT;
		snprintf(error, error_size,
			 "window 0x%x is minimised and no EWMH window manager runs to restore it",
			 id);
		window_list_clear(list);
		return false;
	}
	bool shown = visible;
	if (ewmh) {
		window_list_clear(list);
		windows_ask_manager(windows, id);
		if (windows_wait_focused(windows, id, list, index))
			return true;
		/* The manager did not (or not in time): do it ourselves if we can. */
		shown = windows_find(list, id, index) && list->items[*index].visible;
		if (shown)
			top = list->items[*index].top;
	}
	window_list_clear(list);
	if (!shown || !windows_raise_focus(windows, id, top)) {
		*failure = FAILURE_CONFLICT;
		snprintf(error, error_size, "window 0x%x could not be focused: it is not shown",
			 id);
		return false;
	}
	windows_list(windows, list);
	if (!windows_find(list, id, index)) {
		*failure = FAILURE_NOT_FOUND;
		snprintf(error, error_size, "window 0x%x went away as it was focused", id);
		window_list_clear(list);
		return false;
	}
	return true;
}
