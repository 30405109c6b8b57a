/* screen-spawn.c: starts boxd-screen on a socketpair (screen-spawn.h). */
#include "screen-spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "screen-protocol.h"

bool screen_display_present(const char *display)
{
	if (display[0] != ':' && strncmp(display, "unix:", 5) != 0)
		return true;
	long number = strtol(strchr(display, ':') + 1, NULL, 10);
	char path[64];
	snprintf(path, sizeof path, "/tmp/.X11-unix/X%ld", number);
	return access(path, F_OK) == 0;
}

/* Resolved once, before the first fork, so the child only execs. */
static const char *screen_program(void)
{
	static char *path;
	if (!path)
		path = helper_path("boxd-screen");
	return path;
}

static int screen_spawn_child(const char *display, int idle_sec, bool warm, int child_end,
			      pid_t *pid)
{
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, child_end, SCREEN_WORKER_FD);
	posix_spawn_file_actions_addclosefrom_np(&actions, SCREEN_WORKER_FD + 1);
	posix_spawnattr_t attributes;
	helper_spawn_attributes(&attributes);
	char idle[16];
	snprintf(idle, sizeof idle, "%d", idle_sec);
	char *argv[] = {"boxd-screen",          "--display", (char *)display, "--idle-exit", idle,
			warm ? "--warm" : NULL, NULL};
	int failed = posix_spawn(pid, screen_program(), &actions, &attributes, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attributes);
	return failed;
}

int screen_spawn(const char *display, int idle_sec, bool warm, pid_t *pid, char *error,
		 size_t error_size)
{
	screen_program();
	int ends[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) < 0) {
		snprintf(error, error_size, "cannot make a socketpair for the screen worker: %s",
			 strerror(errno));
		return -1;
	}
	/* Keep the child's end off fd 3 so dup2 really clears close-on-exec. */
	if (ends[1] == SCREEN_WORKER_FD) {
		int moved = fcntl(ends[1], F_DUPFD_CLOEXEC, SCREEN_WORKER_FD + 1);
		close(ends[1]);
		ends[1] = moved;
	}
	int failed = screen_spawn_child(display, idle_sec, warm, ends[1], pid);
	close(ends[1]);
	if (failed) {
		snprintf(error, error_size,
			 "cannot start the screen worker %s (%s); is boxd installed completely?",
			 screen_program(), strerror(failed));
		close(ends[0]);
		return -1;
	}
	fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK);
	return ends[0];
}

enum failure screen_exit_meaning(int status, char *message, size_t message_size)
{
	bool done = status >= 0;
	if (done && WIFEXITED(status) && WEXITSTATUS(status) == SCREEN_EXIT_X_LOST) {
		snprintf(message, message_size,
			 "the X server went away; the screen works again once it is back");
		return FAILURE_DISPLAY_UNAVAILABLE;
	}
	if (done && WIFSIGNALED(status))
		snprintf(
			message, message_size,
			"the screen worker was ended by signal %d; it restarts on the next request",
			WTERMSIG(status));
	else if (done && WIFEXITED(status) && WEXITSTATUS(status) == 127)
		snprintf(message, message_size,
			 "cannot start the screen worker boxd-screen; is boxd installed "
			 "completely?");
	else
		snprintf(message, message_size,
			 "the screen worker stopped (status %d); it restarts on the next request",
			 done && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return FAILURE_INTERNAL;
}
