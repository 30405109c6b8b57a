#include "archive-sandbox.h"
#include "text.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <seccomp.h>
#include <sys/capability.h>

/* ThreadSanitizer builds (tests/tsan/run-archive): gcc says so with a
 * macro, clang with a feature. */
#if defined(__SANITIZE_THREAD__)
#define BOXD_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BOXD_TSAN 1
#endif
#endif

/* Every call the worker may make, and why it needs it. Anything not here
 * kills the process: exec, sockets, ptrace, mounts, namespaces, ... */
static const char *const common_calls[] = {
	"read",        "write",         "readv",        "writev",
	"close",       "lseek",                                /* the streams */
	"pread64",     "pwrite64",                             /* sparse data */
	"fstat",       "newfstatat",    "statx",               /* what is there */
	"openat",      "openat2",       "fcntl",        "dup", /* below the open directory only */
	"getdents64",  "readlinkat",                           /* walking a folder */
	"brk",         "mmap",          "munmap",       "mremap",
	"madvise",                                                   /* malloc */
	"futex",       "clock_gettime", "gettimeofday", "getrandom", /* libc and temp names */
	"getpid",      "gettid",        "rt_sigreturn", "rt_sigprocmask",
	"sigaltstack", "exit",          "exit_group",
};

static const char *const extract_calls[] = {
	"mkdirat",  "unlinkat", "renameat",  "renameat2",       "symlinkat",
	"linkat",   "fchmod",   "fchmodat",  "utimensat",       "ftruncate",
	"umask",    "rename",   "nanosleep", "clock_nanosleep", /* the hash cache, after the upload */
	"setfsuid", "setfsgid", /* writing as the box user, and back for the hash cache */
};

/* The diff hashes on threads and may rebuild the hash cache file. clone is
 * allowed for threads only (below); clone3, whose flags seccomp cannot see,
 * answers ENOSYS so glibc falls back to clone. */
static const char *const diff_calls[] = {
	"set_robust_list",   "rseq",      "mprotect", "sched_yield", "rt_sigaction",
	"sched_getaffinity", "ftruncate", "rename",   "renameat",    "renameat2",
	"fadvise64",         "setfsuid",  "setfsgid", /* each thread reads as the box user */
};

#ifdef BOXD_TSAN
/* What ThreadSanitizer's runtime needs on top, in its builds only: its own
 * thread, started with the diff's first, sleeps in nanosleep; a report
 * reads /proc/self/maps and the program's path (open, readlink: the raw
 * calls, not the *at ones) and writes to its log_path. */
static const char *const sanitizer_calls[] = {"nanosleep", "open", "readlink"};
#endif

static void report_denied(int signal_number, siginfo_t *info, void *context)
{
	char text[96];
	int length = snprintf(text, sizeof text, "boxd-archive: seccomp denied system call %d\n",
			      info->si_syscall);
	(void)!write(2, text, (size_t)length);
	_exit(1);
}

static bool allow_calls(scmp_filter_ctx filter, const char *const *calls, size_t count, char *why,
			size_t why_size)
{
	for (size_t i = 0; i < count; i++) {
		int number = seccomp_syscall_resolve_name(calls[i]);
		if (number == __NR_SCMP_ERROR ||
		    seccomp_rule_add(filter, SCMP_ACT_ALLOW, number, 0) < 0)
			return text_fail(why, why_size, "cannot allow %s", calls[i]);
	}
	return true;
}

static bool install_filter(enum archive_sandbox_profile profile, char *why, size_t why_size)
{
	bool debug = getenv("BOXD_ARCHIVE_SECCOMP_DEBUG") != NULL;
	if (debug) {
		struct sigaction action = {.sa_sigaction = report_denied, .sa_flags = SA_SIGINFO};
		sigaction(SIGSYS, &action, NULL);
	}
	scmp_filter_ctx filter = seccomp_init(debug ? SCMP_ACT_TRAP : SCMP_ACT_KILL_PROCESS);
	if (!filter)
		return text_fail(why, why_size, "seccomp_init failed");
	/* Harmless probes fail with an errno: libc's isatty on stdout, and the
	 * sanitizers' prctl calls in test builds. */
	bool ok = seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOTTY), SCMP_SYS(ioctl), 0) == 0 &&
		  seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prctl), 0) == 0 &&
		  allow_calls(filter, common_calls, sizeof common_calls / sizeof *common_calls, why,
			      why_size) &&
		  (profile != ARCHIVE_SANDBOX_EXTRACT ||
		   allow_calls(filter, extract_calls, sizeof extract_calls / sizeof *extract_calls,
			       why, why_size)) &&
		  (profile != ARCHIVE_SANDBOX_DIFF ||
		   allow_calls(filter, diff_calls, sizeof diff_calls / sizeof *diff_calls, why,
			       why_size));
#ifdef BOXD_TSAN
	ok = ok && allow_calls(filter, sanitizer_calls,
			       sizeof sanitizer_calls / sizeof *sanitizer_calls, why, why_size);
#endif
	if (ok && profile == ARCHIVE_SANDBOX_DIFF)
		ok = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD)) ==
			     0 &&
		     seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) == 0;
	if (ok && seccomp_load(filter) < 0) {
		snprintf(why, why_size, "seccomp_load failed");
		ok = false;
	}
	seccomp_release(filter);
	return ok;
}

/* Keeps only `keep` in every set (bounding included); a non-root worker has
 * none to begin with and keeps none. */
static bool trim_capabilities(const cap_value_t *keep, int count, char *why, size_t why_size)
{
	for (cap_value_t cap = 0; cap <= CAP_LAST_CAP; cap++) {
		bool kept = false;
		for (int i = 0; i < count; i++)
			kept |= keep[i] == cap;
		if (!kept && CAP_IS_SUPPORTED(cap) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
		    errno != EINVAL && errno != EPERM) {
			return text_fail(why, why_size, "cannot drop capability %d: %s", cap,
					 strerror(errno));
		}
	}
	cap_t caps = cap_init(); /* all clear */
	if (geteuid() == 0 && count > 0) {
		cap_set_flag(caps, CAP_PERMITTED, count, keep, CAP_SET);
		cap_set_flag(caps, CAP_EFFECTIVE, count, keep, CAP_SET);
	}
	int status = cap_set_proc(caps);
	cap_free(caps);
	if (status < 0)
		return text_fail(why, why_size, "cannot set capabilities: %s", strerror(errno));
	return true;
}

bool archive_sandbox_enter(enum archive_sandbox_profile profile, char *why, size_t why_size)
{
	/* Files belong to the box user because the worker acts as that user
	 * (archive-worker.c): no chown. */
	static const cap_value_t extract_caps[] = {CAP_DAC_OVERRIDE, CAP_FOWNER};
	static const cap_value_t create_caps[] = {CAP_DAC_READ_SEARCH};
	bool extract = profile == ARCHIVE_SANDBOX_EXTRACT;
	if (!trim_capabilities(extract ? extract_caps : create_caps, extract ? 2 : 1, why,
			       why_size))
		return false;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return text_fail(why, why_size, "cannot set no_new_privs: %s", strerror(errno));
	return install_filter(profile, why, why_size);
}
