/* Unit tests for the screen's damage generation (screen.c) against a real
 * Xvfb of its own: still screen, same number; a drawing, a new one. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <X11/Xlib.h>

#include "screen.h"

#include "check.h"

static pid_t xvfb_pid;

/* Starts Xvfb on a free display (it picks and reports the number). */
static bool start_xvfb(char *name, size_t size)
{
	int pipe_fds[2];
	if (pipe(pipe_fds) != 0)
		return false;
	xvfb_pid = fork();
	if (xvfb_pid == 0) {
		char fd_text[16];
		snprintf(fd_text, sizeof fd_text, "%d", pipe_fds[1]);
		close(pipe_fds[0]);
		execlp("Xvfb", "Xvfb", "-displayfd", fd_text, "-screen", "0", "320x200x24",
		       "-nolisten", "tcp", (char *)NULL);
		_exit(127);
	}
	close(pipe_fds[1]);
	/* Xvfb writes the number, then "\n" in a second write: closing the
	 * pipe before that newline would kill it. */
	char number[16] = "";
	size_t got = 0;
	ssize_t n;
	while (got < sizeof number - 1 && !strchr(number, '\n') &&
	       (n = read(pipe_fds[0], number + got, sizeof number - 1 - got)) > 0)
		got += (size_t)n;
	close(pipe_fds[0]);
	if (!strchr(number, '\n'))
		return false;
	number[strcspn(number, "\n")] = '\0';
	snprintf(name, size, ":%s", number);
	return true;
}

static void draw(Display *display, Window window, unsigned long colour)
{
	GC gc = XCreateGC(display, window, 0, NULL);
	XSetForeground(display, gc, colour);
	XFillRectangle(display, window, gc, 10, 10, 50, 50);
	XFreeGC(display, gc);
	XSync(display, False);
}

/* boxd's connection to `name`, checked; NULL when it could not connect. */
static struct screen *open_screen(const char *name)
{
	char error[256];
	struct screen *screen = screen_open(name, error, sizeof error);
	CHECKF(screen, "%s", error);
	return screen;
}

static void test_generation(const char *name)
{
	struct screen *screen = open_screen(name);
	if (!screen)
		return;
	CHECK(screen_has_damage(screen));
	Display *other = XOpenDisplay(name);
	Window root = DefaultRootWindow(other);

	uint64_t first = screen_damage_generation(screen);
	CHECK(screen_damage_generation(screen) == first);

	draw(other, root, 0xff0000);
	uint64_t after_draw = screen_damage_generation(screen);
	CHECKF(after_draw != first, "no change seen after a drawing (%llu)",
	       (unsigned long long)first);
	CHECK(screen_damage_generation(screen) == after_draw);

	/* Reported again after the first report was consumed. */
	draw(other, root, 0x00ff00);
	CHECK(screen_damage_generation(screen) != after_draw);

	XCloseDisplay(other);
	screen_close(screen);
}

/* screen_look: the same generations from the cursor's round trip alone,
 * with the pointer read in it (moving it draws nothing). */
static void test_look(const char *name)
{
	struct screen *screen = open_screen(name);
	if (!screen)
		return;
	Display *other = XOpenDisplay(name);
	Window root = DefaultRootWindow(other);
	struct screen_cursor *cursor;
	uint64_t first = screen_look(screen, &cursor);
	CHECK(cursor != NULL);
	screen_cursor_free(cursor);

	XWarpPointer(other, None, root, 0, 0, 0, 0, 123, 45);
	XSync(other, False);
	CHECK(screen_look(screen, &cursor) == first);
	int x = 0, y = 0;
	unsigned long serial;
	if (cursor)
		screen_cursor_where(cursor, &x, &y, &serial);
	CHECKF(x == 123 && y == 45, "the pointer read at %d,%d", x, y);
	screen_cursor_free(cursor);

	for (unsigned long colour = 0x0000ff; colour <= 0x0000ff << 2; colour <<= 1) {
		draw(other, root, colour);
		uint64_t after_draw = screen_look(screen, &cursor);
		screen_cursor_free(cursor);
		CHECKF(after_draw != first, "no change seen after a drawing (%llu)",
		       (unsigned long long)first);
		CHECK(screen_look(screen, &cursor) == after_draw);
		screen_cursor_free(cursor);
		first = after_draw;
	}
	XCloseDisplay(other);
	screen_close(screen);
}

int main(void)
{
	char name[32];
	if (!start_xvfb(name, sizeof name)) {
		fprintf(stderr, "cannot start Xvfb (install xvfb)\n");
		return 1;
	}
	test_generation(name);
	test_look(name);
	kill(xvfb_pid, SIGTERM);
	waitpid(xvfb_pid, NULL, 0);
	return check_done("screen-damage");
}
