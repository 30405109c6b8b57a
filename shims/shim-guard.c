/* shim-guard.c: a command may not signal boxd or any shim.
 *
 * Commands usually run as root, so permissions cannot keep them from killing
 * their supervisors. A seccomp filter in the command hands every syscall that
 * sends a signal (kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo,
 * pidfd_send_signal) to the shim as a user notification; the shim refuses it
 * with EPERM when it aims at every process (-1), at a process (or process
 * group led by one) running boxd or boxd-shim, and lets everything else
 * through. Only these syscalls pay the round trip; nothing else is filtered.
 * The general confinement of commands is a separate seccomp policy. */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd-passing.h"
#include "shim.h"

static const char *const signal_syscalls[] = {
	"kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal",
};

bool guard_install(int channel)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return false;
	/* No no_new_privs: sudo and setuid programs keep working in commands. */
	seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	/* 32-bit programs in a command are filtered alike instead of killed. */
	seccomp_arch_add(ctx, SCMP_ARCH_X86);
	seccomp_arch_add(ctx, SCMP_ARCH_X32);
	for (size_t i = 0; i < sizeof signal_syscalls / sizeof signal_syscalls[0]; i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_NOTIFY,
				     seccomp_syscall_resolve_name(signal_syscalls[i]), 0) != 0) {
			seccomp_release(ctx);
			return false;
		}
	if (seccomp_load(ctx) != 0) {
		seccomp_release(ctx);
		return false;
	}
	int fd = seccomp_notify_fd(ctx);
	bool sent = fd_passing_send(channel, fd, 'g', 0);
	close(fd);
	seccomp_release(ctx);
	return sent;
}

int guard_receive(int channel)
{
	int fd = receive_fd(channel);
	if (fd >= 0)
		fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

int receive_fd(int channel)
{
	char byte;
	struct iovec part = {&byte, 1};
	union {
		char space[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	struct msghdr message = {.msg_iov = &part, .msg_iovlen = 1,
				 .msg_control = control.space, .msg_controllen = sizeof control.space};
	/* The child either sends the fd or fails (and closes its end). */
	if (recvmsg(channel, &message, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	struct cmsghdr *header = CMSG_FIRSTHDR(&message);
	if (!header || header->cmsg_type != SCM_RIGHTS)
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(header), sizeof fd);
	return fd;
}

static bool is_protected_pid(struct shim *shim, long pid)
{
	if (pid <= 0)
		return false;
	if (pid == getpid())
		return true;
	char path[64], target[4096];
	snprintf(path, sizeof path, "/proc/%ld/exe", pid);
	ssize_t n = readlink(path, target, sizeof target - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	/* A replaced binary reads "/usr/bin/boxd (deleted)". */
	char *deleted = strstr(target, " (deleted)");
	if (deleted && deleted[10] == '\0')
		*deleted = '\0';
	for (size_t i = 0; i < shim->spec.protected_exe_count; i++)
		if (!strcmp(target, shim->spec.protected_exes[i]))
			return true;
	return false;
}

/* The pid a pidfd (or a /proc/PID dir fd) of `caller` refers to, or 0. */
static long pidfd_target(pid_t caller, long fd)
{
	char path[96], line[256];
	snprintf(path, sizeof path, "/proc/%d/fdinfo/%ld", caller, fd);
	FILE *f = fopen(path, "re");
	long pid = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Pid: %ld", &pid) == 1)
			break;
	if (f)
		fclose(f);
	if (pid)
		return pid;
	snprintf(path, sizeof path, "/proc/%d/fd/%ld", caller, fd);
	ssize_t n = readlink(path, line, sizeof line - 1);
	if (n > 0) {
		line[n] = '\0';
		sscanf(line, "/proc/%ld", &pid);
	}
	return pid;
}

static bool refuse(struct shim *shim, const struct seccomp_notif *n, const char *name)
{
	long target = (long)(int)n->data.args[0];
	if (name && !strcmp(name, "pidfd_send_signal"))
		target = pidfd_target((pid_t)n->pid, target);
	bool third = name && (!strcmp(name, "tgkill") || !strcmp(name, "rt_tgsigqueueinfo"));
	int signal = (int)n->data.args[third ? 2 : 1];
	if (signal == 0)
		return false; /* probing whether a process exists is harmless */
	if (name && !strcmp(name, "kill")) {
		if (target == -1)
			return true;
		if (target < -1)
			target = -target; /* a process group: judged by its leader */
	}
	return is_protected_pid(shim, target);
}

void guard_answer(struct shim *shim)
{
	struct seccomp_notif request;
	memset(&request, 0, sizeof request);
	if (ioctl(shim->guard_fd, SECCOMP_IOCTL_NOTIF_RECV, &request) != 0) {
		if (errno != EINTR && errno != EAGAIN && errno != ENOENT) {
			close(shim->guard_fd);
			shim->guard_fd = -1;
		}
		return;
	}
	struct seccomp_notif_resp response = {.id = request.id};
	/* By name, so 32-bit processes (other numbers) are judged alike. */
	char *name = seccomp_syscall_resolve_num_arch(request.data.arch, request.data.nr);
	bool refused = refuse(shim, &request, name);
	free(name);
	if (refused)
		response.error = -EPERM;
	else
		response.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	ioctl(shim->guard_fd, SECCOMP_IOCTL_NOTIF_SEND, &response);
}
