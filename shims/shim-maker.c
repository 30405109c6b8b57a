/* shim-maker.c: `boxd-shim --spares`, the process spare shims are forked
 * from.
 *
 * A spare started as a program of its own costs an exec of this binary and
 * glibc's start (which asks the CPU for its features and caches with CPUID:
 * on a VM each is an exit to the hypervisor, 0.4 ms of CPU per start on the
 * machine of docs/performance.md), then a fork to leave boxd. boxd starts
 * the maker once (boxd/exec/exec-spawn.c) and sends it one message per spare, the
 * spare's channel (SCM_RIGHTS); the maker forks, and the child goes on in
 * main() as `boxd-shim --spare` would after its detaching fork: the same
 * process state (the maker does nothing else), not boxd's child, in a
 * session of its own, with the signal guard's filter compiled (by the maker,
 * once: libseccomp takes a few hundred microseconds to build it). The maker
 * ignores SIGCHLD, so the kernel reaps the spares it made when they end. It
 * exits when boxd closes its end, or dies. */
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "fd-passing.h"
#include "protected.h"
#include "shim.h"

bool maker_run(int *channel, void **guard_filter)
{
	int control = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (control < 0 || null < 0)
		return false;
	dup2(null, STDIN_FILENO);
	close(null);
	/* Signals aimed at boxd's process group do not reach it. */
	setsid();
	for (size_t i = 0; i < shim_ignored_signal_count; i++)
		signal(shim_ignored_signals[i], SIG_IGN);
	signal(SIGCHLD, SIG_IGN);
	/* The same filter for every command: compiled once, here, for all;
	 * the same for the cgroup mount each spare's protected entry names. */
	void *filter = guard_prepare();
	protected_warm();
	for (;;) {
		int fd = fd_passing_receive(control, NULL);
		if (fd < 0)
			return false; /* boxd is gone */
		pid_t pid = fork();
		if (pid == 0) {
			close(control);
			signal(SIGCHLD, SIG_DFL); /* the shim reaps its command */
			*channel = fd;
			*guard_filter = filter;
			return true;
		}
		/* Forked or not, the channel is the spare's: without a fork boxd
		 * sees its end, as for a spare that died. */
		close(fd);
	}
}
