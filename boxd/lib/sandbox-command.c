/* sandbox-command.c: the commands' seccomp filter (see sandbox.h): allow
 * everything, refuse signals, ptrace and memory writes aimed at boxd and at
 * the shim, and the kill(-1) broadcast. */
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>

/* boxd runs a handful of threads; more than this and the rest go unprotected. */
#define PROTECTED_MAX 64

struct protected_ids {
	pid_t ids[PROTECTED_MAX]; /* processes and their threads */
	size_t count;
	pid_t groups[2];          /* thread group ids: boxd, the shim */
	size_t group_count;
};

static void protect(struct protected_ids *set, pid_t id)
{
	for (size_t i = 0; i < set->count; i++)
		if (set->ids[i] == id)
			return;
	if (set->count < PROTECTED_MAX)
		set->ids[set->count++] = id;
}

/* A process and every thread it has now (kill(tid) reaches the whole process). */
static void protect_process(struct protected_ids *set, pid_t pid)
{
	if (pid <= 0)
		return;
	set->groups[set->group_count++] = pid;
	protect(set, pid);
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *dir = opendir(path);
	if (!dir)
		return;
	for (struct dirent *entry; (entry = readdir(dir));) {
		long tid = strtol(entry->d_name, NULL, 10);
		if (tid > 0)
			protect(set, (pid_t)tid);
	}
	closedir(dir);
}

/* pid_t arguments are 32 bits, but a caller may pass them sign-extended or
 * not in the 64-bit register: compare the low half only, as the kernel does. */
static int refuse_if(scmp_filter_ctx ctx, int errno_value, const char *syscall, unsigned arg, pid_t id)
{
	int nr = seccomp_syscall_resolve_name(syscall);
	if (nr == __NR_SCMP_ERROR)
		return -ENOSYS;
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)errno_value), nr, 1,
				SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, 0xffffffffu, (uint32_t)id));
}

static int add_rules(scmp_filter_ctx ctx, const struct protected_ids *set)
{
	/* Syscalls whose first argument names a target process or thread. */
	static const char *const by_id[] = {"kill", "tkill", "rt_sigqueueinfo", "process_vm_writev"};
	/* Syscalls whose first argument is a thread group, second a thread. */
	static const char *const by_group[] = {"tgkill", "rt_tgsigqueueinfo"};
	int rc = 0;
	for (size_t i = 0; !rc && i < set->count; i++) {
		for (size_t s = 0; !rc && s < sizeof by_id / sizeof by_id[0]; s++)
			rc = refuse_if(ctx, EPERM, by_id[s], 0, set->ids[i]);
		for (size_t s = 0; !rc && s < sizeof by_group / sizeof by_group[0]; s++)
			rc = refuse_if(ctx, EPERM, by_group[s], 1, set->ids[i]);
		if (!rc)
			rc = refuse_if(ctx, EPERM, "ptrace", 1, set->ids[i]);
	}
	for (size_t i = 0; !rc && i < set->group_count; i++) {
		rc = refuse_if(ctx, EPERM, "kill", 0, -set->groups[i]); /* its process group */
		for (size_t s = 0; !rc && s < sizeof by_group / sizeof by_group[0]; s++)
			rc = refuse_if(ctx, EPERM, by_group[s], 0, set->groups[i]);
	}
	if (!rc)
		rc = refuse_if(ctx, EPERM, "kill", 0, -1);
	/* A pidfd may come from open("/proc/PID"): nothing to compare. ENOSYS makes
	 * callers (Go, systemd tools) fall back to kill(), which is checked. */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), seccomp_syscall_resolve_name("pidfd_send_signal"), 0);
	return rc;
}

/* 32-bit and x32 programs run on this kernel too; they get the same rules. */
static int add_architectures(scmp_filter_ctx ctx)
{
#if defined(__x86_64__)
	static const uint32_t extra[] = {SCMP_ARCH_X86, SCMP_ARCH_X32};
#elif defined(__aarch64__)
	static const uint32_t extra[] = {SCMP_ARCH_ARM};
#else
	static const uint32_t extra[] = {SCMP_ARCH_NATIVE};
#endif
	for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
		int rc = seccomp_arch_add(ctx, extra[i]);
		if (rc < 0 && rc != -EEXIST)
			return rc;
	}
	return 0;
}

static bool has_sys_admin(void)
{
	cap_t caps = cap_get_proc();
	cap_flag_value_t value = CAP_CLEAR;
	if (caps)
		cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &value);
	cap_free(caps);
	return value == CAP_SET;
}

bool sandbox_install_command_filter(pid_t boxd_pid, pid_t shim_pid, char *error, size_t size)
{
	struct protected_ids set = {0};
	protect_process(&set, boxd_pid);
	protect_process(&set, shim_pid);
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		snprintf(error, size, "command filter: libseccomp could not start a filter");
		return false;
	}
	int rc = add_architectures(ctx);
	if (!rc)
		rc = add_rules(ctx, &set);
	/* No NO_NEW_PRIVS: sudo and setuid programs must keep working in commands.
	 * That needs CAP_SYS_ADMIN; without it (boxd not root) NNP it is. */
	if (!rc)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, has_sys_admin() ? 0 : 1);
	if (!rc)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	if (!rc)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc < 0) {
		snprintf(error, size, "command filter: could not install the seccomp filter: %s",
			 strerror(-rc));
		return false;
	}
	return true;
}
