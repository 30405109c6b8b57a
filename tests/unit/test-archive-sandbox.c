/* The archive worker's confinement: after archive_sandbox_enter() a process
 * may not exec, open sockets or fork (it is killed with SIGSYS), while what
 * its job needs still works. Each case runs in a child of its own. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "archive-sandbox.h"
#include "check.h"

enum action { ALLOWED_WORK, EXEC, SOCKET, FORK };

static const char *const action_names[] = {"allowed work", "exec", "socket", "fork"};

/* Runs `action` sandboxed in a child; returns its wait status. */
static int run_confined(enum archive_sandbox_profile profile, enum action action)
{
	int pipe_fds[2];
	if (pipe(pipe_fds) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		char why[256];
		if (!archive_sandbox_enter(profile, why, sizeof why)) {
			fprintf(stderr, "sandbox: %s\n", why);
			_exit(3);
		}
		switch (action) {
		case ALLOWED_WORK: {
			char buffer[16];
			if (write(pipe_fds[1], "x", 1) == 1 && read(pipe_fds[0], buffer, 1) == 1)
				_exit(0);
			_exit(4);
		}
		case EXEC: {
			char *argv[] = {"/bin/true", NULL};
			execve("/bin/true", argv, NULL);
			_exit(5);
		}
		case SOCKET: syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0); _exit(6);
		case FORK:
			syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0); /* a process, not a thread */
			_exit(7);
		}
		_exit(8);
	}
	close(pipe_fds[0]);
	close(pipe_fds[1]);
	int status = 0;
	waitpid(pid, &status, 0);
	return status;
}

static void expect(enum archive_sandbox_profile profile, enum action action, bool killed)
{
	int status = run_confined(profile, action);
	bool ok = killed ? WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS
			 : WIFEXITED(status) && WEXITSTATUS(status) == 0;
	CHECKF(ok, "profile %d, %s: wait status 0x%x, expected %s", (int)profile,
	       action_names[action], (unsigned)status, killed ? "SIGSYS" : "exit 0");
}

int main(void)
{
	if (getenv("BOXD_ARCHIVE_SECCOMP_DEBUG"))
		unsetenv("BOXD_ARCHIVE_SECCOMP_DEBUG");
	enum archive_sandbox_profile profiles[] = {ARCHIVE_SANDBOX_EXTRACT, ARCHIVE_SANDBOX_CREATE,
						   ARCHIVE_SANDBOX_DIFF};
	for (int i = 0; i < 3; i++) {
		expect(profiles[i], ALLOWED_WORK, false);
		expect(profiles[i], EXEC, true);
		expect(profiles[i], SOCKET, true);
		expect(profiles[i], FORK, true);
	}
	return check_done("archive-sandbox");
}
