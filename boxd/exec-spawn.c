/* exec-spawn.c: starting boxd-shim processes, and keeping one spare. */
#include "exec-spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sched.h>

#include "fd-passing.h"
#include "helpers.h"
#include "text.h"
#include "xalloc.h"

extern char **environ;

static char *shim_program, *shim_cgroup;

void exec_spawn_init(const char *program, const char *cgroup)
{
	shim_program = xstrdup(program);
	shim_cgroup = cgroup ? xstrdup(cgroup) : NULL;
}

/* The shim is born in the shims' leaf cgroup (CLONE_INTO_CGROUP): moving a
 * process between cgroups later costs milliseconds. Between clone and exec
 * the child only calls async-signal-safe functions. */
static pid_t spawn_into_cgroup(int input, int output)
{
	int dir = open(shim_cgroup, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0 && errno == ENOENT && mkdir(shim_cgroup, 0755) == 0)
		dir = open(shim_cgroup, O_PATH | O_DIRECTORY | O_CLOEXEC); /* trimmed while empty */
	if (dir < 0)
		return -1;
	struct clone_args args = {.flags = CLONE_INTO_CGROUP | CLONE_VFORK,
				  .exit_signal = SIGCHLD, .cgroup = (uint64_t)dir};
	pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof args);
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		for (int s = 1; s < NSIG; s++)
			signal(s, SIG_DFL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (dup2(input, 0) < 0 || dup2(output, 1) < 0 || dup2(null, 2) < 0)
			_exit(127);
		char *argv[] = {"boxd-shim", NULL};
		execve(shim_program, argv, environ);
		_exit(127);
	}
	close(dir);
	return pid;
}

/* Starts boxd-shim with `input` as its stdin and `output` as its stdout.
 * Returns the pid of the first shim process, or -1 with errno set. */
static pid_t spawn_process(int input, int output)
{
	pid_t pid = shim_cgroup ? spawn_into_cgroup(input, output) : -1;
	if (pid >= 0)
		return pid;
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, input, 0);
	posix_spawn_file_actions_adddup2(&actions, output, 1);
	posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
	posix_spawnattr_t attributes;
	helper_spawn_attributes(&attributes);
	char *argv[] = {"boxd-shim", NULL};
	int failed = posix_spawn(&pid, shim_program, &actions, &attributes, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attributes);
	errno = failed;
	return failed ? -1 : pid;
}

/* One shim started ahead of need, detached and waiting for a spec on its
 * socket: a command's start then skips the shim's own start. It costs one
 * sleeping process; it leaves when boxd closes the socket (or dies). */
static struct {
	pid_t first_pid;
	int channel;    /* our end of its stdin socket; -1: no spare */
	int status_fd;  /* read end of its answer pipe */
} spare = {-1, -1, -1};

void exec_spawn_spare(void)
{
	int channel[2], status[2];
	if (spare.channel >= 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0)
		return;
	if (pipe2(status, O_CLOEXEC) != 0) {
		close(channel[0]);
		close(channel[1]);
		return;
	}
	spare.first_pid = spawn_process(channel[1], status[1]);
	close(channel[1]);
	close(status[1]);
	if (spare.first_pid < 0) {
		close(channel[0]);
		close(status[0]);
		return;
	}
	spare.channel = channel[0];
	spare.status_fd = status[0];
}

/* Hands the spec to the spare; false when there is none (or it died). */
static bool spare_take(int spec_fd, pid_t *first_pid, int *status_fd)
{
	if (spare.channel < 0)
		return false;
	bool sent = fd_passing_send(spare.channel, spec_fd, 's', MSG_DONTWAIT);
	close(spare.channel);
	spare.channel = -1;
	if (!sent) {
		close(spare.status_fd);
		waitpid(spare.first_pid, NULL, 0);
		return false;
	}
	*first_pid = spare.first_pid;
	*status_fd = spare.status_fd;
	return true;
}

void exec_spawn_stop(void)
{
	if (spare.channel < 0)
		return;
	close(spare.channel); /* the spare sees the end and leaves */
	spare.channel = -1;
	/* Its answer pipe closes when it is gone: then its cgroup is empty. */
	struct pollfd gone = {.fd = spare.status_fd, .events = POLLIN};
	char scratch[64];
	while (poll(&gone, 1, 1000) == 1 && read(spare.status_fd, scratch, sizeof scratch) > 0)
		;
	close(spare.status_fd);
	waitpid(spare.first_pid, NULL, 0);
}

void exec_spawn_renew(void)
{
	if (spare.channel >= 0) {
		close(spare.channel); /* it sees the end and leaves */
		spare.channel = -1;
		close(spare.status_fd);
		/* The process boxd started: it forks the spare away and exits at once. */
		waitpid(spare.first_pid, NULL, 0);
	}
	exec_spawn_spare();
}

bool exec_spawn(int spec_fd, pid_t *first_pid, int *status_fd, char *error, size_t error_size)
{
	if (spare_take(spec_fd, first_pid, status_fd))
		return true;
	int status[2];
	if (pipe2(status, O_CLOEXEC) != 0)
		return text_fail(error, error_size, "cannot pass the command to its shim: %s", strerror(errno));
	*first_pid = spawn_process(spec_fd, status[1]);
	int failed = errno;
	close(status[1]);
	if (*first_pid < 0) {
		close(status[0]);
		return text_fail(error, error_size, "cannot start %s: %s", shim_program, strerror(failed));
	}
	*status_fd = status[0];
	return true;
}
