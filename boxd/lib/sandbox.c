/* sandbox.c: seccomp filters for workers (allowlists) and commands (see
 * sandbox.h). A policy is a list of rules turned into a libseccomp filter at
 * install, so the debug switch may come at any time before. */
#include "text.h"
#include "sandbox.h"

#include <errno.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "xalloc.h"

enum rule_kind { RULE_ALLOW, RULE_ALLOW_IF, RULE_DENY };

struct sandbox_rule {
	enum rule_kind kind;
	char *syscall;
	unsigned arg;
	uint64_t value;
	int errno_value;
};

struct sandbox_policy {
	char *name;
	bool debug;
	struct sandbox_rule *rules;
	size_t rule_count, rule_capacity;
};

const char *const sandbox_base_syscalls[] = {
	"read", "write", "readv", "writev", "pread64", "pwrite64", "lseek", "close",
	"fstat", "newfstatat", "brk", "mmap", "munmap", "mremap", "madvise", "mprotect",
	"futex", "rt_sigreturn", "rt_sigprocmask", "getpid", "gettid", "clock_gettime",
	"clock_nanosleep", "nanosleep", "exit", "exit_group", "restart_syscall", NULL,
};

/* libc probes that are harmless to refuse: opening locale or timezone files,
 * isatty() on stderr, glibc registering restartable sequences per thread. */
static const struct { const char *syscall; int errno_value; } harmless_probes[] = {
	{"open", EACCES}, {"openat", EACCES}, {"ioctl", ENOTTY}, {"rseq", ENOSYS},
};

struct sandbox_policy *sandbox_policy_new(const char *name)
{
	struct sandbox_policy *policy = xcalloc(1, sizeof *policy);
	policy->name = xstrdup(name);
	const char *env = getenv("BOXD_SANDBOX_DEBUG");
	policy->debug = env && *env && strcmp(env, "0") != 0;
	return policy;
}

void sandbox_policy_free(struct sandbox_policy *policy)
{
	if (!policy)
		return;
	for (size_t i = 0; i < policy->rule_count; i++)
		free(policy->rules[i].syscall);
	free(policy->rules);
	free(policy->name);
	free(policy);
}

void sandbox_policy_set_debug(struct sandbox_policy *policy, bool debug)
{
	policy->debug = debug;
}

static void add_rule(struct sandbox_policy *policy, struct sandbox_rule rule)
{
	if (policy->rule_count == policy->rule_capacity) {
		policy->rule_capacity = policy->rule_capacity ? policy->rule_capacity * 2 : 32;
		policy->rules = xrealloc(policy->rules, policy->rule_capacity * sizeof *policy->rules);
	}
	rule.syscall = xstrdup(rule.syscall);
	policy->rules[policy->rule_count++] = rule;
}

void sandbox_policy_allow(struct sandbox_policy *policy, const char *const *syscalls)
{
	for (; *syscalls; syscalls++)
		add_rule(policy, (struct sandbox_rule){.kind = RULE_ALLOW, .syscall = (char *)*syscalls});
}

void sandbox_policy_allow_if(struct sandbox_policy *policy, const char *syscall,
			     unsigned arg, uint64_t value)
{
	add_rule(policy, (struct sandbox_rule){.kind = RULE_ALLOW_IF, .syscall = (char *)syscall,
					       .arg = arg, .value = value});
}

void sandbox_policy_deny(struct sandbox_policy *policy, const char *syscall, int errno_value)
{
	add_rule(policy, (struct sandbox_rule){.kind = RULE_DENY, .syscall = (char *)syscall,
					       .errno_value = errno_value});
}

static bool policy_mentions(const struct sandbox_policy *policy, const char *syscall)
{
	for (size_t i = 0; i < policy->rule_count; i++)
		if (strcmp(policy->rules[i].syscall, syscall) == 0)
			return true;
	return false;
}

/* ---- debug mode: name the forbidden syscall, from a SIGSYS handler ---- */

#define DEBUG_NAMES 512
static const char *debug_names[DEBUG_NAMES];
static char debug_policy_name[64];

static void append(char *buffer, size_t size, size_t *length, const char *text)
{
	while (*text && *length + 1 < size)
		buffer[(*length)++] = *text++;
}

/* Only async-signal-safe calls here: the names were resolved before. */
static void debug_report(int signal_number, siginfo_t *info, void *context)
{
	(void)signal_number;
	(void)context;
	char line[256], digits[16];
	size_t length = 0;
	int nr = info->si_syscall, i = (int)sizeof digits;
	digits[--i] = '\0';
	unsigned value = nr < 0 ? 0u : (unsigned)nr;
	do
		digits[--i] = (char)('0' + value % 10);
	while ((value /= 10) && i > 0);
	append(line, sizeof line, &length, "sandbox ");
	append(line, sizeof line, &length, debug_policy_name);
	append(line, sizeof line, &length, ": forbidden syscall ");
	append(line, sizeof line, &length,
	       nr >= 0 && nr < DEBUG_NAMES && debug_names[nr] ? debug_names[nr] : "?");
	append(line, sizeof line, &length, " (");
	append(line, sizeof line, &length, digits + i);
	append(line, sizeof line, &length, ")\n");
	syscall(SYS_write, STDERR_FILENO, line, length);
	/* Not _exit(): under ASan its interceptor runs the leak checker, which
	 * clones a thread, which the filter refuses. */
	syscall(SYS_exit_group, SANDBOX_DEBUG_EXIT);
}

static bool debug_prepare(const struct sandbox_policy *policy, char *error, size_t size)
{
	snprintf(debug_policy_name, sizeof debug_policy_name, "%s", policy->name);
	for (int nr = 0; nr < DEBUG_NAMES; nr++) {
		if (!debug_names[nr])
			debug_names[nr] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	}
	struct sigaction action = {.sa_sigaction = debug_report, .sa_flags = SA_SIGINFO};
	if (sigaction(SIGSYS, &action, NULL) != 0)
		return text_fail(error, size, "sandbox %s: cannot install the SIGSYS handler of debug mode: %s",
			    policy->name, strerror(errno));
	return true;
}

/* ---- building and loading ---- */

static bool add_to_filter(scmp_filter_ctx ctx, const struct sandbox_policy *policy,
			  const struct sandbox_rule *rule, char *error, size_t size)
{
	int nr = seccomp_syscall_resolve_name(rule->syscall);
	if (nr == __NR_SCMP_ERROR)
		return text_fail(error, size, "sandbox %s: unknown syscall `%s` in the policy; "
			    "fix its name (see syscalls(2))", policy->name, rule->syscall);
	int rc;
	switch (rule->kind) {
	case RULE_ALLOW:
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		break;
	case RULE_ALLOW_IF:
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1,
				      SCMP_CMP(rule->arg, SCMP_CMP_EQ, rule->value));
		break;
	default:
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)rule->errno_value), nr, 0);
		break;
	}
	if (rc < 0)
		return text_fail(error, size, "sandbox %s: libseccomp refused the rule for `%s`: %s",
			    policy->name, rule->syscall, strerror(-rc));
	return true;
}

bool sandbox_policy_install(struct sandbox_policy *policy, char *error, size_t size)
{
	uint32_t refuse = policy->debug ? SCMP_ACT_TRAP : SCMP_ACT_KILL_PROCESS;
	scmp_filter_ctx ctx = seccomp_init(refuse);
	if (!ctx)
		return text_fail(error, size, "sandbox %s: libseccomp could not start a filter", policy->name);
	bool ok = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) == 0 &&
		  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1) == 0 &&
		  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) == 0;
	if (!ok)
		text_fail(error, size, "sandbox %s: libseccomp refused the filter attributes", policy->name);
	for (size_t i = 0; ok && i < policy->rule_count; i++)
		ok = add_to_filter(ctx, policy, &policy->rules[i], error, size);
	for (size_t i = 0; ok && i < sizeof harmless_probes / sizeof harmless_probes[0]; i++) {
		if (policy_mentions(policy, harmless_probes[i].syscall))
			continue;
		struct sandbox_rule probe = {.kind = RULE_DENY, .syscall = (char *)harmless_probes[i].syscall,
					     .errno_value = harmless_probes[i].errno_value};
		ok = add_to_filter(ctx, policy, &probe, error, size);
	}
	if (ok && policy->debug)
		ok = debug_prepare(policy, error, size);
	if (ok) {
		int rc = seccomp_load(ctx);
		if (rc < 0)
			ok = text_fail(error, size, "sandbox %s: the kernel refused the seccomp filter: %s",
				  policy->name, strerror(-rc));
	}
	seccomp_release(ctx);
	return ok;
}
