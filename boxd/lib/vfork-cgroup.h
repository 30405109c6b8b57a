/* vfork-cgroup.h: starting a program born in a given cgroup, as cheaply as
 * posix_spawn starts one.
 *
 * A fork copies the caller's page tables and write-protects its memory: in
 * boxd (a few hundred mappings, with threads) that and the copy-on-write
 * faults after it were half the CPU boxd spent per command, every spare shim
 * being one fork. posix_spawn avoids the copy (the child shares the
 * caller's memory until it execs) but cannot name a cgroup, and moving a
 * process between cgroups afterwards costs milliseconds. */
#ifndef BOXD_VFORK_CGROUP_H
#define BOXD_VFORK_CGROUP_H

#include <sys/types.h>

/* Runs `child(arg)` in a new process born in the cgroup `cgroup_dir` (an
 * O_PATH or O_DIRECTORY fd; where the kernel kills a child born so, once
 * and from then on, one that joins the cgroup by its cgroup.procs before
 * it runs `child`) and returns its pid once it has called execve
 * successfully or exited; -1 with errno set if it could not be made. The
 * child shares our memory until then and runs on a stack of its own with
 * every signal handler reset to the default and every signal blocked: it
 * may only make system calls (set its fds, unblock signals, execve) and
 * must end in execve or _exit. Not thread-safe: one call at a time. Where
 * the CPU has no support here it is a plain fork (same contract). */
pid_t vfork_into_cgroup(int cgroup_dir, int (*child)(void *arg), void *arg);

#endif
