#include "archive-run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xalloc.h"

#ifndef BOXD_LIBEXECDIR
#define BOXD_LIBEXECDIR "/usr/local/libexec"
#endif

extern char **environ;

const char *archive_run_program(void)
{
	static char path[PATH_MAX];
	if (path[0])
		return path;
	const char *override = getenv("BOXD_ARCHIVE");
	if (override && *override) {
		snprintf(path, sizeof path, "%s", override);
		return path;
	}
	char self[PATH_MAX];
	ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
	if (length > 0) {
		self[length] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			snprintf(slash + 1, sizeof self - (size_t)(slash + 1 - self), "boxd-archive");
			if (access(self, X_OK) == 0) {
				snprintf(path, sizeof path, "%s", self);
				return path;
			}
		}
	}
	snprintf(path, sizeof path, "%s/boxd-archive", BOXD_LIBEXECDIR);
	return path;
}

static void close_pair(int pair[2])
{
	for (int i = 0; i < 2; i++)
		if (pair[i] >= 0)
			close(pair[i]);
}

bool archive_run_start(const char *const args[], int input_file_fd,
		       struct archive_process *process, char *why, size_t why_size)
{
	int input[2] = {-1, -1}, output[2] = {-1, -1}, error[2] = {-1, -1};
	if ((input_file_fd < 0 && pipe2(input, O_CLOEXEC) < 0) || pipe2(output, O_CLOEXEC) < 0 ||
	    pipe2(error, O_CLOEXEC) < 0) {
		snprintf(why, why_size, "cannot make pipes for the archive worker: %s", strerror(errno));
		close_pair(input), close_pair(output), close_pair(error);
		return false;
	}
	const char *argv[16] = {archive_run_program()};
	for (int i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, input_file_fd >= 0 ? input_file_fd : input[0], 0);
	posix_spawn_file_actions_adddup2(&actions, output[1], 1);
	posix_spawn_file_actions_adddup2(&actions, error[1], 2);
	posix_spawnattr_t attributes;
	posix_spawnattr_init(&attributes);
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&attributes, &none);
	posix_spawnattr_setsigdefault(&attributes, &all);
	posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	pid_t pid;
	int status = posix_spawn(&pid, argv[0], &actions, &attributes, (char **)argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attributes);
	if (input[0] >= 0)
		close(input[0]);
	close(output[1]);
	close(error[1]);
	if (status != 0) {
		snprintf(why, why_size, "cannot start the archive worker %s: %s", argv[0], strerror(status));
		if (input[1] >= 0)
			close(input[1]);
		close(output[0]);
		close(error[0]);
		return false;
	}
	process->pid = pid;
	process->pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
	process->input_fd = input[1];
	process->output_fd = output[0];
	process->error_fd = error[0];
	if (process->input_fd >= 0)
		fcntl(process->input_fd, F_SETFL, O_NONBLOCK);
	fcntl(process->output_fd, F_SETFL, O_NONBLOCK);
	fcntl(process->error_fd, F_SETFL, O_NONBLOCK);
	if (process->pid_fd < 0) {
		snprintf(why, why_size, "cannot watch the archive worker: %s", strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		if (process->input_fd >= 0)
			close(process->input_fd);
		close(process->output_fd);
		close(process->error_fd);
		return false;
	}
	return true;
}

int archive_run_reap(struct archive_process *process)
{
	siginfo_t info = {0};
	int status = -1;
	if (waitid(P_PIDFD, (id_t)process->pid_fd, &info, WEXITED | WNOHANG) == 0 && info.si_pid) {
		status = info.si_code == CLD_EXITED ? info.si_status << 8 : (info.si_status & 0x7f);
	}
	close(process->pid_fd);
	process->pid_fd = -1;
	return status;
}
