/* shim-terminal.c: a command's pseudo-terminal, held by its shim.
 *
 * The shim keeps the master: the command's output comes out of it, typed
 * input goes into it, and its size and foreground process group are set
 * and read on it. Because the shim holds it, not boxd, a restart of boxd
 * loses no byte of a terminal and no keystroke's effect: the program keeps
 * its terminal, and the ring of recent output (SHIM_REPLAY_BYTES, masked
 * as everything the shim sends) lets a client that attaches to the new
 * boxd see the screen as it is. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "shim-protocol.h"
#include "shim.h"
#include "xalloc.h"

static void set_size(int fd, unsigned cols, unsigned rows)
{
	struct winsize size = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
	ioctl(fd, TIOCSWINSZ, &size);
}

bool terminal_open(struct shim *shim, int *slave)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return false;
	char name[128];
	if (grantpt(master) != 0 || unlockpt(master) != 0 ||
	    ptsname_r(master, name, sizeof name) != 0) {
		int saved = errno;
		close(master);
		errno = saved;
		return false;
	}
	*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*slave < 0) {
		int saved = errno;
		close(master);
		errno = saved;
		return false;
	}
	/* The slave's owner is the command's user (a non-root shell opening
	 * /dev/tty, or `tty` and `ssh` checking it, expect their own). */
	if (geteuid() == 0 && fchown(*slave, shim->spec.uid, (gid_t)-1) != 0) {
		/* Not fatal: the command has the open descriptor all the same. */
	}
	set_size(master, shim->spec.pty_cols, shim->spec.pty_rows);
	shim->pty_fd = master;
	shim->replay.size = SHIM_REPLAY_BYTES;
	/* Untouched pages cost nothing: a quiet terminal keeps its shim small. */
	shim->replay.data = xmalloc(shim->replay.size);
	return true;
}

bool terminal_adopt_in_child(void)
{
	/* The child leads a process group already (setpgid in child_run)
	 * only when it is not a terminal's: see there. */
	if (setsid() < 0)
		return false;
	return ioctl(STDIN_FILENO, TIOCSCTTY, 0) == 0;
}

void terminal_resize(struct shim *shim, const char *payload)
{
	unsigned cols = 0, rows = 0;
	if (shim->pty_fd < 0 || sscanf(payload, "%u %u", &cols, &rows) != 2)
		return;
	/* boxd checked the range; a shim never trusts a size it cannot show. */
	if (cols < SHIM_PTY_MIN || rows < SHIM_PTY_MIN || cols > SHIM_PTY_MAX_COLS ||
	    rows > SHIM_PTY_MAX_ROWS)
		return;
	set_size(shim->pty_fd, cols, rows);
}

void terminal_signal(struct shim *shim, int signal)
{
	pid_t group = shim->pty_fd >= 0 ? tcgetpgrp(shim->pty_fd) : -1;
	/* No foreground group (the shell is gone, the slave closed): the
	 * command's shell itself, if it still runs. */
	if (group > 0)
		kill(-group, signal);
	else if (shim->pid > 0 && !shim->exited)
		kill(shim->pid, signal);
}
