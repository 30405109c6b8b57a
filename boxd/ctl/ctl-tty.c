/* ctl-tty.c: the local terminal's size and raw mode (ctl-tty.h). */
#include "ctl-tty.h"

#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>

static struct termios saved;
static int saved_fd = -1;

void ctl_tty_size(int fd, int *cols, int *rows)
{
	struct winsize size;
	bool known = ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col && size.ws_row;
	*cols = known ? size.ws_col : 80;
	*rows = known ? size.ws_row : 24;
}

bool ctl_tty_raw(int fd)
{
	struct termios raw;
	if (tcgetattr(fd, &saved) != 0)
		return false;
	raw = saved;
	cfmakeraw(&raw);
	/* Armed before the change: an exit between the two still restores. */
	static bool registered;
	if (!registered)
		registered = atexit(ctl_tty_restore) == 0;
	saved_fd = fd;
	if (tcsetattr(fd, TCSADRAIN, &raw) != 0) {
		saved_fd = -1;
		return false;
	}
	return true;
}

void ctl_tty_restore(void)
{
	if (saved_fd < 0)
		return;
	tcsetattr(saved_fd, TCSADRAIN, &saved);
	saved_fd = -1;
}
