/* vfork-cgroup.c: clone3(CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP) with a
 * stack of the child's own (vfork-cgroup.h), or, where the kernel kills
 * such a child at birth, the same without CLONE_INTO_CGROUP and a child
 * that joins the cgroup itself. */
#include "vfork-cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sched.h>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif

/* The child only makes system calls; a guard page below catches more. */
#define CHILD_STACK_SIZE (64u << 10)

struct start {
	int (*child)(void *);
	void *arg;
	int join;          /* a cgroup dir the child moves itself into; -1: born there */
	volatile int *ran; /* set by the child first thing (memory shared with us) */
};

/* The kernel's struct sigaction for rt_sigaction: the child calls the
 * system call itself, not libc's wrapper (which a sanitizer intercepts and
 * which may touch state the parent shares). */
struct kernel_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	unsigned long mask;
};

/* In the child: a handler of the parent's must never run here, on memory
 * the parent is using, so every one is reset before signals are let
 * through (the parent blocked them all before the clone). */
__attribute__((no_sanitize_address)) static int child_main(void *arg)
{
	const struct start *start = arg;
	*start->ran = 1;
	struct kernel_sigaction default_action = {.handler = SIG_DFL};
	for (long s = 1; s < NSIG; s++)
		syscall(SYS_rt_sigaction, s, &default_action, NULL, sizeof(unsigned long));
	if (start->join >= 0) {
		/* Into the cgroup by its cgroup.procs; left where it is when
		 * that fails, as a program started without a cgroup is. */
		long fd = syscall(SYS_openat, start->join, "cgroup.procs", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			syscall(SYS_write, fd, "0", 1);
			syscall(SYS_close, fd);
		}
	}
	return start->child(start->arg);
}

#if defined(__x86_64__)
/* clone3 returns in the child on the new stack, where no C frame exists to
 * return to: the child's side is written here, calling `entry(start)` and
 * then exit with its result. */
__attribute__((no_sanitize_address)) static long clone3_on_stack(struct clone_args *args,
								  int (*entry)(void *),
								  void *start)
{
	register long rax __asm__("rax") = SYS_clone3;
	register struct clone_args *rdi __asm__("rdi") = args;
	register long rsi __asm__("rsi") = sizeof *args;
	register int (*r12)(void *) __asm__("r12") = entry;
	register void *r13 __asm__("r13") = start;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "xor %%ebp, %%ebp\n\t"
			 "mov %%r13, %%rdi\n\t"
			 "call *%%r12\n\t"
			 "mov %%eax, %%edi\n\t"
			 "mov $60, %%eax\n\t" /* exit */
			 "syscall\n\t"
			 "hlt\n"
			 "1:"
			 : "+r"(rax)
			 : "r"(rdi), "r"(rsi), "r"(r12), "r"(r13)
			 : "rcx", "r11", "memory", "cc");
	return rax;
}

static void *child_stack(void)
{
	static void *stack;
	if (!stack) {
		void *area = mmap(NULL, CHILD_STACK_SIZE + 4096, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (area == MAP_FAILED)
			return NULL;
		mprotect(area, 4096, PROT_NONE); /* the guard page */
		stack = (char *)area + 4096;
	}
	return stack;
}

static pid_t clone_child(int cgroup_dir, struct start *start)
{
	void *stack = child_stack();
	if (!stack)
		return -1;
	struct clone_args args;
	memset(&args, 0, sizeof args);
	args.flags = CLONE_VM | CLONE_VFORK | (start->join < 0 ? CLONE_INTO_CGROUP : 0);
	args.exit_signal = SIGCHLD;
	args.stack = (uint64_t)(uintptr_t)stack;
	args.stack_size = CHILD_STACK_SIZE;
	args.cgroup = (uint64_t)cgroup_dir;
	long pid = clone3_on_stack(&args, child_main, start);
	if (pid < 0) {
		errno = (int)-pid;
		return -1;
	}
	return (pid_t)pid;
}
#else
/* Elsewhere a fork born in the cgroup: the same contract, the copy paid. */
static pid_t clone_child(int cgroup_dir, struct start *start)
{
	struct clone_args args;
	memset(&args, 0, sizeof args);
	args.flags = CLONE_VFORK | (start->join < 0 ? CLONE_INTO_CGROUP : 0);
	args.exit_signal = SIGCHLD;
	args.cgroup = (uint64_t)cgroup_dir;
	pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof args);
	if (pid == 0)
		_exit(child_main(start));
	return pid;
}
#endif

/* Set once a child was killed at birth. Kernels with the kill-sequence
 * check (6.13 and later, and stable backports) kill a child cloned with
 * CLONE_INTO_CGROUP into a cgroup whose cgroup.kill count differs from
 * that of the parent's cgroup: once either was killed (boxd's unit's
 * cgroup, then boxd restarted in it; or the shims' cgroup), every such
 * clone is, for good. From then on the child joins the cgroup itself,
 * which costs the cgroup migration lock and is never killed so. */
static bool clone_into_kills;

/* The flag each child sets: shared memory, so that a child forked without
 * CLONE_VM (the non-x86_64 path) sets ours too. */
static volatile int *child_ran(void)
{
	static volatile int *flag;
	if (!flag) {
		void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		flag = page == MAP_FAILED ? NULL : page;
	}
	return flag;
}

static pid_t clone_blocked(int cgroup_dir, struct start *start)
{
	sigset_t all, before;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &before);
	*start->ran = 0;
	pid_t pid = clone_child(cgroup_dir, start);
	int saved = errno;
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	errno = saved;
	return pid;
}

pid_t vfork_into_cgroup(int cgroup_dir, int (*child)(void *arg), void *arg)
{
	struct start start = {child, arg, -1, child_ran()};
	if (!start.ran) {
		errno = ENOMEM;
		return -1;
	}
	if (!clone_into_kills) {
		pid_t pid = clone_blocked(cgroup_dir, &start);
		/* vfork returns once the child exec'd or ended: one that never
		 * ran a line was killed before it could, at its birth. */
		if (pid < 0 || *start.ran)
			return pid;
		waitpid(pid, NULL, 0); /* ours alone: no one else knows of it */
		clone_into_kills = true;
	}
	start.join = cgroup_dir;
	return clone_blocked(-1, &start);
}
