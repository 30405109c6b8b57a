/* screen-pattern: an X client for the screen tests and benchmarks. It covers
 * the screen with a page-like picture (bands of colour, lines of text, two
 * marker squares at known places: pure green at 100,100 and pure blue at
 * 300,100, each 100x100), prints "ready" once drawn, and with --animate FPS
 * moves a red 40x40 square along a row so every frame differs. With
 * --events it prints each button press ("button N X Y") and key press
 * ("key KEYSYM-HEX STATE-HEX") on stdout, for the input tests. With --fill
 * it reads lines "RRGGBB" on stdin and fills the whole window with that
 * colour, answering "filled MS" (ms since the epoch, once the X server has
 * drawn it) for the live screen's latency tests and benchmark. With
 * --noise FPS it covers a 400x400 square at 100,100 with new random pixels
 * every frame: what costs an encoder most (a video, a busy page). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <X11/Xlib.h>
#include <X11/Xutil.h>

static unsigned long pattern_colour(Display *display, unsigned red, unsigned green, unsigned blue)
{
	XColor colour = {.red = (unsigned short)(red * 257),
			 .green = (unsigned short)(green * 257),
			 .blue = (unsigned short)(blue * 257),
			 .flags = DoRed | DoGreen | DoBlue};
	XAllocColor(display, DefaultColormap(display, DefaultScreen(display)), &colour);
	return colour.pixel;
}

static void pattern_draw(Display *display, Window window, GC gc, int width, int height)
{
	XSetForeground(display, gc, pattern_colour(display, 255, 255, 255));
	XFillRectangle(display, window, gc, 0, 0, (unsigned)width, (unsigned)height);
	for (int band = 0; band < 32; band++) {
		XSetForeground(display, gc,
			       pattern_colour(display, band * 8, 64 + band * 4, 200 - band * 5));
		XFillRectangle(display, window, gc, band * width / 32, 0,
			       (unsigned)(width / 32 + 1), 60);
	}
	XSetForeground(display, gc, pattern_colour(display, 20, 20, 20));
	char line[160];
	for (int row = 0; row < 40; row++) {
		snprintf(
			line, sizeof line,
			"%03d  The quick brown fox jumps over the lazy dog; boxd screen test line, "
			"column %d, value %d.",
			row, row * 7 % 13, row * row);
		XDrawString(display, window, gc, 520, 90 + row * 17, line, (int)strlen(line));
	}
	XSetForeground(display, gc, pattern_colour(display, 0, 255, 0));
	XFillRectangle(display, window, gc, 100, 100, 100, 100);
	XSetForeground(display, gc, pattern_colour(display, 0, 0, 255));
	XFillRectangle(display, window, gc, 300, 100, 100, 100);
	for (int i = 0; i < 12; i++) {
		XSetForeground(display, gc,
			       pattern_colour(display, 30 * i % 256, 90, 255 - 20 * i));
		XFillArc(display, window, gc, 60 + i * 30, 300 + (i % 3) * 40, 120, 120, 0,
			 360 * 64);
	}
}

/* One frame of the moving square. */
static void animate_step(Display *display, Window window, GC gc, int width, int step,
			 unsigned long red, unsigned long white)
{
	int x = 20 + (step * 8) % (width - 80);
	XSetForeground(display, gc, white);
	XFillRectangle(display, window, gc, 0, 700, (unsigned)width, 40);
	XSetForeground(display, gc, red);
	XFillRectangle(display, window, gc, x, 700, 40, 40);
	XSync(display, False);
}

int main(int argc, char **argv)
{
	int fps = argc > 2 && strcmp(argv[1], "--animate") == 0 ? atoi(argv[2]) : 0;
	int noise = argc > 2 && strcmp(argv[1], "--noise") == 0 ? atoi(argv[2]) : 0;
	int events = argc > 1 && strcmp(argv[1], "--events") == 0;
	int fill = argc > 1 && strcmp(argv[1], "--fill") == 0;
	Display *display = XOpenDisplay(NULL);
	if (!display) {
		fprintf(stderr, "screen-pattern: cannot open the display\n");
		return 1;
	}
	int screen = DefaultScreen(display);
	int width = DisplayWidth(display, screen), height = DisplayHeight(display, screen);
	XSetWindowAttributes attributes = {.override_redirect = True};
	Window window = XCreateWindow(display, RootWindow(display, screen), 0, 0, (unsigned)width,
				      (unsigned)height, 0, CopyFromParent, InputOutput,
				      CopyFromParent, CWOverrideRedirect, &attributes);
	XSelectInput(display, window, ExposureMask | (events ? ButtonPressMask | KeyPressMask : 0));
	XMapWindow(display, window);
	GC gc = XCreateGC(display, window, 0, NULL);
	XEvent event;
	do
		XNextEvent(display, &event);
	while (event.type != Expose);
	pattern_draw(display, window, gc, width, height);
	XSync(display, False);
	printf("ready\n");
	fflush(stdout);
	char request[64];
	while (fill && fgets(request, sizeof request, stdin)) {
		unsigned value = (unsigned)strtoul(request, NULL, 16);
		XSetForeground(
			display, gc,
			pattern_colour(display, value >> 16, (value >> 8) & 0xff, value & 0xff));
		XFillRectangle(display, window, gc, 0, 0, (unsigned)width, (unsigned)height);
		XSync(display, False);
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		printf("filled %lld\n", (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
		fflush(stdout);
	}
	if (fill)
		return 0;
	if (noise > 0) {
		XImage *image = XCreateImage(display, DefaultVisual(display, screen),
					     (unsigned)DefaultDepth(display, screen), ZPixmap, 0,
					     malloc(400 * 400 * 4), 400, 400, 32, 0);
		unsigned state = 12345;
		for (;;) {
			uint32_t *pixels = (uint32_t *)(void *)image->data;
			for (int i = 0; i < 400 * 400; i++) {
				state = state * 1103515245u + 12345u;
				pixels[i] = state >> 8;
			}
			XPutImage(display, window, gc, image, 0, 0, 100, 100, 400, 400);
			XSync(display, False);
			struct timespec pause = {0, 1000000000L / noise};
			nanosleep(&pause, NULL);
		}
	}
	unsigned long red = pattern_colour(display, 255, 0, 0);
	unsigned long white = pattern_colour(display, 255, 255, 255);
	/* --animate: moves until it is killed; else on to the events below. */
	if (fps > 0) {
		struct timespec pause = {0, 1000000000L / fps};
		for (int step = 0;; step++) {
			animate_step(display, window, gc, width, step, red, white);
			nanosleep(&pause, NULL);
		}
	}
	for (;;) {
		XNextEvent(display, &event);
		if (event.type == ButtonPress) {
			printf("button %u %d %d\n", event.xbutton.button, event.xbutton.x,
			       event.xbutton.y);
		} else if (event.type == KeyPress) {
			char text[16];
			KeySym keysym = NoSymbol;
			XLookupString(&event.xkey, text, sizeof text, &keysym, NULL);
			printf("key %lx %x\n", keysym, event.xkey.state);
		}
		fflush(stdout);
	}
}
