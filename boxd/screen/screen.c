/* screen.c: the worker's X11 connection, screen grabs and the cursor. */
#include "screen.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <unistd.h>

#include <X11/Xutil.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/Xdamage.h>
#include <X11/extensions/Xfixes.h>

#include "log.h"
#include "text.h"
#include "xalloc.h"

struct screen {
	Display *display;
	Window root;
	Visual *visual;
	int depth;
	enum screen_layout layout;
	atomic_int width, height;
	bool has_shm;
	bool has_xfixes;
	int xfixes_event_base;
	screen_event_sink sink; /* the rest of the events (screen_set_event_sink) */
	void *sink_ctx;
	/* DAMAGE on the root window: every report bumps `generation` (see
	 * screen_damage_generation). 0 when the server has no DAMAGE. */
	Damage damage;
	int damage_event;
	atomic_uint_least64_t generation;
};

struct screen_grabber {
	struct screen *screen;
	XImage *image;
	XShmSegmentInfo shm;
	bool uses_shm;
	int width, height; /* the size `image` was made for */
};

/* The last X protocol error seen by this thread: Xlib calls the error handler
 * in the thread that reads the error, which is the one that made the request
 * and then synced. */
static _Thread_local int last_x_error;

static int screen_on_error(Display *display, XErrorEvent *event)
{
	last_x_error = event->error_code;
	char text[128];
	XGetErrorText(display, event->error_code, text, sizeof text);
	log_msg(LOG_LEVEL_DEBUG, "X error %s (request %d.%d)", text, event->request_code,
		event->minor_code);
	return 0;
}

/* Xlib's default ends the process with exit(), running atexit handlers from
 * whatever thread noticed. The worker ends here on purpose and at once: boxd
 * sees the exit status, answers display_unavailable and starts a new worker
 * that waits for the server. A recording in progress stays playable up to its
 * last fragment (see record.c). */
static int screen_on_io_error(Display *display)
{
	log_msg(LOG_LEVEL_WARNING, "the X server %s went away", DisplayString(display));
	_exit(SCREEN_EXIT_X_LOST);
}

static bool screen_pick_layout(struct screen *screen, char *error, size_t error_size)
{
	XVisualInfo template = {.visualid = XVisualIDFromVisual(screen->visual)};
	int count = 0;
	XVisualInfo *info = XGetVisualInfo(screen->display, VisualIDMask, &template, &count);
	int bits_per_pixel = 0;
	int formats = 0;
	XPixmapFormatValues *format = XListPixmapFormats(screen->display, &formats);
	for (int i = 0; i < formats; i++)
		if (format[i].depth == screen->depth)
			bits_per_pixel = format[i].bits_per_pixel;
	XFree(format);
	bool ok = false;
	if (info && count > 0 && bits_per_pixel == 32 &&
	    ImageByteOrder(screen->display) == LSBFirst) {
		if (info->red_mask == 0xff0000 && info->green_mask == 0xff00 &&
		    info->blue_mask == 0xff) {
			screen->layout = SCREEN_LAYOUT_BGR0;
			ok = true;
		} else if (info->red_mask == 0xff && info->green_mask == 0xff00 &&
			   info->blue_mask == 0xff0000) {
			screen->layout = SCREEN_LAYOUT_RGB0;
			ok = true;
		}
	}
	if (!ok)
		snprintf(error, error_size,
			 "the display has depth %d at %d bits a pixel; only 24-bit true colour at "
			 "32 bits is supported",
			 screen->depth, bits_per_pixel);
	if (info)
		XFree(info);
	return ok;
}

/* One report when the damaged region of the root window goes from empty to
 * non-empty: cheaper than a report per drawing, and enough to know that
 * something changed (see screen_on_damage). */
static void screen_watch_damage(struct screen *screen)
{
	int error_base;
	if (!XDamageQueryExtension(screen->display, &screen->damage_event, &error_base))
		return;
	screen->damage = XDamageCreate(screen->display, screen->root, XDamageReportNonEmpty);
}

struct screen *screen_open(const char *display_name, char *error, size_t error_size)
{
	static bool initialised;
	if (!initialised) {
		XInitThreads();
		XSetErrorHandler(screen_on_error);
		XSetIOErrorHandler(screen_on_io_error);
		initialised = true;
	}
	Display *display = XOpenDisplay(display_name);
	if (!display) {
		snprintf(error, error_size,
			 "cannot connect to the X display %s; is the X server running?",
			 display_name);
		return NULL;
	}
	struct screen *screen = xcalloc(1, sizeof *screen);
	screen->display = display;
	int number = DefaultScreen(display);
	screen->root = RootWindow(display, number);
	screen->visual = DefaultVisual(display, number);
	screen->depth = DefaultDepth(display, number);
	atomic_store(&screen->width, DisplayWidth(display, number));
	atomic_store(&screen->height, DisplayHeight(display, number));
	if (!screen_pick_layout(screen, error, error_size)) {
		screen_close(screen);
		return NULL;
	}
	screen->has_shm = XShmQueryExtension(display);
	int event_base, error_base;
	screen->has_xfixes = XFixesQueryExtension(display, &event_base, &error_base);
	screen->xfixes_event_base = screen->has_xfixes ? event_base : -1;
	/* Follow size changes of the root window (RandR on Xvfb). */
	XSelectInput(display, screen->root, StructureNotifyMask);
	screen_watch_damage(screen);
	XSync(display, False);
	return screen;
}

void screen_close(struct screen *screen)
{
	if (!screen)
		return;
	if (screen->damage)
		XDamageDestroy(screen->display, screen->damage);
	XCloseDisplay(screen->display);
	free(screen);
}

Display *screen_display(struct screen *screen)
{
	return screen->display;
}

int screen_width(struct screen *screen)
{
	return atomic_load(&screen->width);
}

int screen_height(struct screen *screen)
{
	return atomic_load(&screen->height);
}

bool screen_has_damage(const struct screen *screen)
{
	return screen->damage != 0;
}

/* The generation once a round trip has just been made: every report of a
 * drawing the server did before it came in ahead of its reply, and is
 * handled here, in whichever thread asks (Xlib locks the connection; the
 * counter is atomic). */
static uint64_t screen_generation_after_round_trip(struct screen *screen)
{
	if (!screen->damage)
		return atomic_fetch_add(&screen->generation, 1) + 1;
	screen_handle_events(screen);
	return atomic_load(&screen->generation);
}

uint64_t screen_damage_generation(struct screen *screen)
{
	if (screen->damage)
		XSync(screen->display, False);
	return screen_generation_after_round_trip(screen);
}

/* Empties the damaged region so that the next drawing reports again, then
 * moves the generation on. The subtract is queued on this connection before
 * anyone can read the new generation, so a grab made after reading it is
 * processed after the subtract: whatever it misses reports anew. */
static void screen_on_damage(struct screen *screen)
{
	XDamageSubtract(screen->display, screen->damage, None, None);
	atomic_fetch_add(&screen->generation, 1);
}

bool screen_handle_events(struct screen *screen)
{
	/* Locked whole: with two threads in here, one could see an event in
	 * XPending that the other takes, and then block in XNextEvent. */
	bool damaged = false;
	XLockDisplay(screen->display);
	while (XPending(screen->display) > 0) {
		XEvent event;
		XNextEvent(screen->display, &event);
		if (screen->damage && event.type == screen->damage_event + XDamageNotify) {
			screen_on_damage(screen);
			damaged = true;
		} else if (event.type == ConfigureNotify &&
			   event.xconfigure.window == screen->root) {
			atomic_store(&screen->width, event.xconfigure.width);
			atomic_store(&screen->height, event.xconfigure.height);
		} else if (event.type == MappingNotify) {
			XRefreshKeyboardMapping(&event.xmapping);
		} else if (screen->sink) {
			screen->sink(screen->sink_ctx, &event);
		}
	}
	XUnlockDisplay(screen->display);
	return damaged;
}

void screen_set_event_sink(struct screen *screen, screen_event_sink sink, void *ctx)
{
	XLockDisplay(screen->display);
	screen->sink = sink;
	screen->sink_ctx = ctx;
	XUnlockDisplay(screen->display);
}

int screen_xfixes_event_base(const struct screen *screen)
{
	return screen->xfixes_event_base;
}

static void screen_grabber_release(struct screen_grabber *grabber)
{
	if (!grabber->image)
		return;
	if (grabber->uses_shm) {
		XShmDetach(grabber->screen->display, &grabber->shm);
		XSync(grabber->screen->display, False);
		shmdt(grabber->shm.shmaddr);
		grabber->image->data = NULL;
	}
	XDestroyImage(grabber->image);
	grabber->image = NULL;
}

/* Makes a shared-memory image of the current screen size; false when the
 * server cannot attach it (a remote server, another IPC namespace). */
static bool screen_grabber_make_shm(struct screen_grabber *grabber, int width, int height)
{
	struct screen *screen = grabber->screen;
	XImage *image =
		XShmCreateImage(screen->display, screen->visual, (unsigned)screen->depth, ZPixmap,
				NULL, &grabber->shm, (unsigned)width, (unsigned)height);
	if (!image)
		return false;
	size_t bytes = (size_t)image->bytes_per_line * (size_t)image->height;
	grabber->shm.shmid = shmget(IPC_PRIVATE, bytes, IPC_CREAT | 0600);
	if (grabber->shm.shmid < 0) {
		XDestroyImage(image);
		return false;
	}
	grabber->shm.shmaddr = image->data = shmat(grabber->shm.shmid, NULL, 0);
	grabber->shm.readOnly = False;
	last_x_error = 0;
	bool attached =
		grabber->shm.shmaddr != (void *)-1 && XShmAttach(screen->display, &grabber->shm);
	XSync(screen->display, False);
	/* Marked for removal now: the segment goes away with the last detach,
	 * even if the worker is killed. */
	shmctl(grabber->shm.shmid, IPC_RMID, NULL);
	if (!attached || last_x_error) {
		if (grabber->shm.shmaddr != (void *)-1)
			shmdt(grabber->shm.shmaddr);
		image->data = NULL;
		XDestroyImage(image);
		return false;
	}
	grabber->image = image;
	grabber->uses_shm = true;
	return true;
}

struct screen_grabber *screen_grabber_new(struct screen *screen)
{
	struct screen_grabber *grabber = xcalloc(1, sizeof *grabber);
	grabber->screen = screen;
	return grabber;
}

void screen_grabber_free(struct screen_grabber *grabber)
{
	if (!grabber)
		return;
	screen_grabber_release(grabber);
	free(grabber);
}

bool screen_grabber_uses_shm(const struct screen_grabber *grabber)
{
	return grabber->uses_shm;
}

static bool screen_grab_plain(struct screen_grabber *grabber, int width, int height)
{
	struct screen *screen = grabber->screen;
	screen_grabber_release(grabber);
	last_x_error = 0;
	grabber->image = XGetImage(screen->display, screen->root, 0, 0, (unsigned)width,
				   (unsigned)height, AllPlanes, ZPixmap);
	grabber->uses_shm = false;
	return grabber->image && !last_x_error;
}

bool screen_grab(struct screen_grabber *grabber, struct screen_image *image, char *error,
		 size_t error_size)
{
	struct screen *screen = grabber->screen;
	int width = screen_width(screen), height = screen_height(screen);
	if (grabber->image && (grabber->width != width || grabber->height != height))
		screen_grabber_release(grabber);
	grabber->width = width;
	grabber->height = height;
	bool ok;
	if (!grabber->image && screen->has_shm && !screen_grabber_make_shm(grabber, width, height))
		screen->has_shm = false; /* once refused, not tried again */
	if (grabber->uses_shm && grabber->image) {
		last_x_error = 0;
		ok = XShmGetImage(screen->display, screen->root, grabber->image, 0, 0, AllPlanes) &&
		     !last_x_error;
	} else {
		ok = screen_grab_plain(grabber, width, height);
	}
	if (!ok)
		return text_fail(
			error, error_size,
			"the X server refused to hand over the screen's pixels (X error %d)",
			last_x_error);
	image->pixels = (uint8_t *)grabber->image->data;
	image->width = width;
	image->height = height;
	image->stride = grabber->image->bytes_per_line;
	image->layout = screen->layout;
	return true;
}

/* XFixes hands the cursor as premultiplied ARGB in `unsigned long`s. */
static void screen_blend_pixel(uint8_t *pixel, unsigned long argb, enum screen_layout layout)
{
	unsigned alpha = (argb >> 24) & 0xff;
	if (alpha == 0)
		return;
	unsigned red = (argb >> 16) & 0xff, green = (argb >> 8) & 0xff, blue = argb & 0xff;
	unsigned keep = 255 - alpha;
	uint8_t *first = layout == SCREEN_LAYOUT_BGR0 ? &pixel[0] : &pixel[2];
	uint8_t *third = layout == SCREEN_LAYOUT_BGR0 ? &pixel[2] : &pixel[0];
	*first = (uint8_t)(blue + (*first * keep + 127) / 255);
	pixel[1] = (uint8_t)(green + (pixel[1] * keep + 127) / 255);
	*third = (uint8_t)(red + (*third * keep + 127) / 255);
}

struct screen_cursor {
	XFixesCursorImage *image;
};

/* NULL when the server has no XFixes. One round trip. */
static struct screen_cursor *screen_cursor_get(struct screen *screen)
{
	if (!screen->has_xfixes)
		return NULL;
	XFixesCursorImage *image = XFixesGetCursorImage(screen->display);
	if (!image)
		return NULL;
	struct screen_cursor *cursor = xcalloc(1, sizeof *cursor);
	cursor->image = image;
	return cursor;
}

void screen_cursor_free(struct screen_cursor *cursor)
{
	if (!cursor)
		return;
	XFree(cursor->image);
	free(cursor);
}

void screen_cursor_where(const struct screen_cursor *cursor, int *x, int *y, unsigned long *serial)
{
	*x = cursor->image->x;
	*y = cursor->image->y;
	*serial = cursor->image->cursor_serial;
}

void screen_cursor_draw(const struct screen_cursor *cursor, struct screen_image *image,
			int origin_x, int origin_y)
{
	const XFixesCursorImage *sprite = cursor->image;
	int left = sprite->x - sprite->xhot - origin_x;
	int top = sprite->y - sprite->yhot - origin_y;
	for (int row = 0; row < sprite->height; row++) {
		int y = top + row;
		if (y < 0 || y >= image->height)
			continue;
		for (int column = 0; column < sprite->width; column++) {
			int x = left + column;
			if (x < 0 || x >= image->width)
				continue;
			uint8_t *pixel =
				image->pixels + (size_t)y * (size_t)image->stride + (size_t)x * 4;
			screen_blend_pixel(pixel, sprite->pixels[row * sprite->width + column],
					   image->layout);
		}
	}
}

uint64_t screen_look(struct screen *screen, struct screen_cursor **cursor)
{
	*cursor = screen_cursor_get(screen);
	/* The cursor's reply is the round trip (a third of a recording's
	 * per-frame X traffic otherwise). */
	if (*cursor)
		return screen_generation_after_round_trip(screen);
	return screen_damage_generation(screen);
}
