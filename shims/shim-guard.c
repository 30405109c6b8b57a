/* shim-guard.c: a command may not take down boxd, a shim or a worker.
 *
 * Commands usually run as root, so permissions cannot keep them from killing
 * their supervisors. A seccomp filter in the command hands the few syscalls
 * that can reach another process to the shim as user notifications: those
 * that send a signal (kill, tkill, tgkill, rt_sigqueueinfo,
 * rt_tgsigqueueinfo, pidfd_send_signal), name a signal's target for later
 * (fcntl F_SETOWN/F_SETOWN_EX, ioctl FIOSETOWN/SIOCSPGRP: a SIGIO, or any
 * signal set with F_SETSIG, sent when the fd is ready), trace or write into
 * another process (ptrace, process_vm_readv/writev) or lower its limits
 * (prlimit64 with a new limit: a CPU limit gets a process killed by the
 * kernel). The shim refuses one with EPERM when it aims at every process
 * (-1), at a protected process (lib/protected.h: by pid and start time,
 * never by name), or at a process group with a protected member, and lets
 * everything else through. Only these calls pay the round trip; the filter's
 * argument checks keep fcntl, ioctl and prlimit64 on their fast path
 * otherwise. A pointer argument (F_SETOWN_EX, the ioctls) is read from the
 * command's memory, which another of its threads could change before the
 * kernel reads it again: a determined root command is not what this stops. */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <linux/sockios.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/magic.h>

#include "fd-passing.h"
#include "io.h"
#include "xalloc.h"
#include "protected.h"
#include "shim.h"

/* The calls that act on another process with ptrace-level access (Linux
 * 6.1 to 6.18), beside ptrace and process_vm_*:
 * - pidfd_getfd copies any fd of the target (a shim's guard listener, then
 *   a command approves its own kill of boxd; boxd's listening socket);
 * - process_madvise pages out or drops the target's memory;
 * - process_mrelease reaps the memory of a target that is dying;
 * - kcmp tells which of the target's fds are which file (how to aim
 *   pidfd_getfd); it takes two pids, either may be protected.
 * Not asked, because they do nothing to the target: pidfd_open (a handle;
 * what is done with it is judged here), waitid(P_PIDFD) (own children
 * only), setns on a pidfd (joins namespaces, which a root command can
 * anyway; the target is untouched), the pidfd ioctls (6.11+: namespace
 * fds and facts, read-only), open_by_handle_at on pidfs (6.13+: a pidfd
 * again), get_robust_list (reads a pointer), move_pages and migrate_pages
 * (NUMA placement of pages; the process goes on). */
static const char *const whole_syscalls[] = {
	"kill",
	"tkill",
	"tgkill",
	"rt_sigqueueinfo",
	"rt_tgsigqueueinfo",
	"pidfd_send_signal",
	"ptrace",
	"process_vm_readv",
	"process_vm_writev",
	"pidfd_getfd",
	"process_madvise",
	"process_mrelease",
	"kcmp",
};

/* A rule for the native and the 32-bit architectures. A name a given
 * architecture lacks (fcntl64 on x86_64) is skipped; false on other errors. */
static bool notify_rule(scmp_filter_ctx ctx, const char *name, unsigned count,
			const struct scmp_arg_cmp *args)
{
	int number = seccomp_syscall_resolve_name(name);
	if (number == __NR_SCMP_ERROR)
		return true;
	int result = seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, number, count, args);
	return result == 0 || result == -EDOM || result == -EINVAL;
}

static bool add_rules(scmp_filter_ctx ctx)
{
	for (size_t i = 0; i < sizeof whole_syscalls / sizeof whole_syscalls[0]; i++)
		if (!notify_rule(ctx, whole_syscalls[i], 0, NULL))
			return false;
	/* Only the calls that name another process: the rest stay fast.
	 * prlimit64 with a new limit on pid 0 is the caller itself (setrlimit,
	 * `ulimit`), which a seed does after its guard is in and before the
	 * shim listens. (A comparison's second datum only counts for a masked
	 * one: 0 elsewhere.) */
	const struct scmp_arg_cmp new_limit[] = {SCMP_A0(SCMP_CMP_NE, 0, 0),
						 SCMP_A2(SCMP_CMP_NE, 0, 0)};
	const struct scmp_arg_cmp set_owner = SCMP_A1(SCMP_CMP_EQ, F_SETOWN, 0);
	const struct scmp_arg_cmp set_owner_ex = SCMP_A1(SCMP_CMP_EQ, F_SETOWN_EX, 0);
	const struct scmp_arg_cmp io_owner = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffff, FIOSETOWN);
	const struct scmp_arg_cmp socket_owner = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffff, SIOCSPGRP);
	return notify_rule(ctx, "prlimit64", 2, new_limit) &&
	       notify_rule(ctx, "fcntl", 1, &set_owner) &&
	       notify_rule(ctx, "fcntl", 1, &set_owner_ex) &&
	       notify_rule(ctx, "fcntl64", 1, &set_owner) &&
	       notify_rule(ctx, "fcntl64", 1, &set_owner_ex) &&
	       notify_rule(ctx, "ioctl", 1, &io_owner) &&
	       notify_rule(ctx, "ioctl", 1, &socket_owner);
}

static scmp_filter_ctx guard_filter(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return NULL;
	/* No no_new_privs: sudo and setuid programs keep working in commands. */
	seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	/* 32-bit programs in a command are filtered alike instead of killed. */
	seccomp_arch_add(ctx, SCMP_ARCH_X86);
	seccomp_arch_add(ctx, SCMP_ARCH_X32);
	if (!add_rules(ctx)) {
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

void *guard_prepare(void)
{
	/* libseccomp builds the BPF program (a few hundred microseconds of
	 * resolving names and sorting rules); exported once, the child loads it
	 * with one seccomp(2) call, the very call seccomp_load would make. */
	scmp_filter_ctx ctx = guard_filter();
	int fd = ctx ? memfd_create("guard", MFD_CLOEXEC) : -1;
	struct sock_fprog *program = NULL;
	if (fd >= 0 && seccomp_export_bpf(ctx, fd) == 0 && lseek(fd, 0, SEEK_SET) == 0) {
		size_t length;
		char *code = io_read_to_end(fd, 1 << 20, &length);
		if (code && length && length % sizeof(struct sock_filter) == 0 &&
		    length / sizeof(struct sock_filter) <= BPF_MAXINSNS) {
			/* One block (one free): the header, then the code. */
			program = xmalloc(sizeof *program + length);
			program->len = (unsigned short)(length / sizeof(struct sock_filter));
			program->filter = (struct sock_filter *)(program + 1);
			memcpy(program->filter, code, length);
		}
		free(code);
	}
	if (fd >= 0)
		close(fd);
	if (ctx)
		seccomp_release(ctx);
	return program;
}

bool guard_install(int channel, const void *prepared)
{
	int fd;
	if (prepared) {
		/* Flags as seccomp_load sets them for this filter: a listener,
		 * no TSYNC, no log, no_new_privs left alone (root's CAP_SYS_ADMIN). */
		fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				  SECCOMP_FILTER_FLAG_NEW_LISTENER, prepared);
		if (fd < 0)
			return false;
	} else {
		scmp_filter_ctx ctx = guard_filter();
		if (!ctx || seccomp_load(ctx) != 0) {
			if (ctx)
				seccomp_release(ctx);
			return false;
		}
		fd = seccomp_notify_fd(ctx);
		seccomp_release(ctx);
	}
	bool sent = fd_passing_send(channel, fd, 'g', 0);
	close(fd);
	return sent;
}

bool guard_channel_renew(int ends[2])
{
	for (int i = 0; i < 2; i++)
		if (ends[i] >= 0)
			close(ends[i]);
	ends[0] = ends[1] = -1;
	return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) == 0;
}

static bool is_protected(const struct shim *shim, long pid)
{
	if (pid <= 0)
		return false;
	if (pid == getpid())
		return true;
	return shim->spec.protected_dir && protected_is(shim->spec.protected_dir, (pid_t)pid);
}

static bool group_protected(const struct shim *shim, pid_t group)
{
	if (group == getpgrp())
		return true;
	return shim->spec.protected_dir && protected_in_group(shim->spec.protected_dir, group);
}

/* A signal owner as F_SETOWN and the ioctls take it: a pid, or a negated
 * process group. */
static bool owner_protected(const struct shim *shim, long owner)
{
	if (owner < 0)
		return group_protected(shim, (pid_t)-owner);
	return is_protected(shim, owner);
}

/* The pid a /proc/PID dir fd of `caller` names (its own `stat` says,
 * wherever that /proc is mounted), or 0. The fd is the command's: it may be
 * any directory, holding a FIFO or a symlink called `stat`, and an open that
 * waits would wedge the shim's one loop (no timeout, no stop). So only a
 * directory of a procfs, and in it a regular file, opened without waiting. */
static long proc_dir_target(pid_t caller, long fd)
{
	char path[96];
	snprintf(path, sizeof path, "/proc/%d/fd/%ld", caller, fd);
	int dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct statfs fs;
	bool procfs = dir >= 0 && fstatfs(dir, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
	int stat_fd =
		procfs ? openat(dir, "stat", O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (dir >= 0)
		close(dir);
	struct stat st;
	char text[64];
	ssize_t n = -1;
	if (stat_fd >= 0 && fstat(stat_fd, &st) == 0 && S_ISREG(st.st_mode))
		n = read(stat_fd, text, sizeof text - 1);
	if (stat_fd >= 0)
		close(stat_fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	return strtol(text, NULL, 10);
}

/* The pid a pidfd (or a /proc/PID dir fd) of `caller` refers to, or 0. */
static long pidfd_target(pid_t caller, long fd)
{
	char path[96], line[256];
	/* The kernel's own file about the fd: nothing of the command's. */
	snprintf(path, sizeof path, "/proc/%d/fdinfo/%ld", caller, fd);
	FILE *f = fopen(path, "re");
	long pid = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Pid: %ld", &pid) == 1)
			break;
	if (f)
		fclose(f);
	return pid ? pid : proc_dir_target(caller, fd);
}

/* Reads `size` bytes at `address` in the calling process. */
static bool read_caller(pid_t caller, uint64_t address, void *into, size_t size)
{
	struct iovec local = {into, size}, remote = {(void *)(uintptr_t)address, size};
	return process_vm_readv(caller, &local, 1, &remote, 1, 0) == (ssize_t)size;
}

static bool refuse_owner_change(const struct shim *shim, const struct seccomp_notif *n,
				const char *name)
{
	pid_t caller = (pid_t)n->pid;
	unsigned command = (unsigned)n->data.args[1];
	if (!strcmp(name, "ioctl")) {
		int owner;
		return !read_caller(caller, n->data.args[2], &owner, sizeof owner) ||
		       owner_protected(shim, owner);
	}
	if (command == F_SETOWN_EX) {
		struct f_owner_ex owner;
		if (!read_caller(caller, n->data.args[2], &owner, sizeof owner))
			return true;
		if (owner.type == F_OWNER_PGRP)
			return group_protected(shim, owner.pid);
		return is_protected(shim, owner.pid);
	}
	return owner_protected(shim, (long)(int)n->data.args[2]);
}

static bool refuse(const struct shim *shim, const struct seccomp_notif *n, const char *name)
{
	if (!name)
		return false;
	long first = (long)(int)n->data.args[0];
	if (!strcmp(name, "fcntl") || !strcmp(name, "fcntl64") || !strcmp(name, "ioctl"))
		return refuse_owner_change(shim, n, name);
	if (!strcmp(name, "ptrace"))
		return first != PTRACE_TRACEME && is_protected(shim, (long)(int)n->data.args[1]);
	if (!strcmp(name, "prlimit64"))
		return first != 0 && is_protected(shim, first);
	if (!strncmp(name, "process_vm_", 11))
		return is_protected(shim, first);
	if (!strcmp(name, "pidfd_send_signal"))
		return n->data.args[1] != 0 &&
		       is_protected(shim, pidfd_target((pid_t)n->pid, first));
	if (!strcmp(name, "pidfd_getfd") || !strcmp(name, "process_madvise") ||
	    !strcmp(name, "process_mrelease"))
		return is_protected(shim, pidfd_target((pid_t)n->pid, first));
	if (!strcmp(name, "kcmp"))
		return is_protected(shim, first) || is_protected(shim, (long)(int)n->data.args[1]);
	bool third = !strcmp(name, "tgkill") || !strcmp(name, "rt_tgsigqueueinfo");
	if ((int)n->data.args[third ? 2 : 1] == 0)
		return false; /* probing whether a process exists is harmless */
	if (!strcmp(name, "kill")) {
		if (first == -1)
			return true;
		if (first < -1) /* a process group: judged by who is in it */
			return group_protected(shim, (pid_t)-first);
	}
	return is_protected(shim, first); /* tkill's thread is mapped to its process */
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
	/* The caller may have died and its pid been reused while we judged. */
	if (ioctl(shim->guard_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &request.id) != 0)
		return;
	if (refused)
		response.error = -EPERM;
	else
		response.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	ioctl(shim->guard_fd, SECCOMP_IOCTL_NOTIF_SEND, &response);
}
