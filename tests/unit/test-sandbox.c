/* test-sandbox: the commands' filter refuses signals to boxd and the shim and
 * kill(-1) but not to the command's own children; worker allowlists kill on
 * anything else, name it in debug mode, answer harmless probes with an errno
 * and fail closed on a bad rule; capabilities_drop keeps its set and a root
 * exec afterwards gets every capability back. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capabilities.h"
#include "sandbox.h"

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static int refused(long rc, int expected_errno)
{
	return rc == -1 && errno == expected_errno;
}

static pid_t boxd_thread_tid;

static void *boxd_thread(void *arg)
{
	(void)arg;
	boxd_thread_tid = (pid_t)syscall(SYS_gettid);
	pause();
	return NULL;
}

/* The command: runs under the filter, returns the number of failed checks. */
static int command_checks(pid_t boxd, pid_t shim, pid_t thread)
{
	failures = 0; /* this child counts its own */
	char error[256];
	if (!sandbox_install_command_filter(boxd, shim, error, sizeof error)) {
		fprintf(stderr, "FAIL install: %s\n", error);
		return 1;
	}
	CHECK(refused(kill(boxd, SIGKILL), EPERM), "kill(boxd, SIGKILL) was not refused");
	CHECK(refused(kill(shim, SIGTERM), EPERM), "kill(shim) was not refused");
	CHECK(refused(kill(-boxd, 0), EPERM), "kill(-boxd) was not refused");
	CHECK(refused(kill(-1, 0), EPERM), "kill(-1) was not refused");
	/* A raw syscall with the pid zero-extended in the register. */
	CHECK(refused(syscall(SYS_kill, (unsigned long)(unsigned)-1, 0), EPERM), "raw kill(-1) not refused");
	CHECK(refused(kill(thread, 0), EPERM), "kill(boxd's thread) was not refused");
	CHECK(refused(syscall(SYS_tkill, boxd, 0), EPERM), "tkill(boxd) was not refused");
	CHECK(refused(syscall(SYS_tgkill, boxd, thread, 0), EPERM), "tgkill(boxd) was not refused");
	CHECK(refused(syscall(SYS_pidfd_send_signal, 0, 0, NULL, 0), ENOSYS), "pidfd_send_signal not ENOSYS");
	CHECK(refused(ptrace(PTRACE_ATTACH, boxd, NULL, NULL), EPERM), "ptrace(boxd) was not refused");
	CHECK(kill(getpid(), 0) == 0, "kill(self, 0) refused: %s", strerror(errno));
	/* Its own child: signals and a debugger's attach work. */
	pid_t child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	CHECK(ptrace(PTRACE_SEIZE, child, NULL, NULL) == 0, "ptrace of own child refused: %s", strerror(errno));
	CHECK(kill(child, SIGKILL) == 0, "kill(own child) refused: %s", strerror(errno));
	int status = 0;
	waitpid(child, &status, 0);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "own child not killed");
	/* The filter survives exec: a shell's kill builtin is refused too. */
	char script[128];
	snprintf(script, sizeof script, "kill -0 %d 2>/dev/null && exit 1; kill -0 $$ || exit 2", (int)boxd);
	child = fork();
	if (child == 0) {
		execl("/bin/sh", "sh", "-c", script, (char *)NULL);
		_exit(3);
	}
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "after exec: sh status %d", status);
	return failures;
}

static void test_command_filter(void)
{
	pthread_t thread;
	pthread_create(&thread, NULL, boxd_thread, NULL);
	while (!__atomic_load_n(&boxd_thread_tid, __ATOMIC_SEQ_CST))
		usleep(1000);
	pid_t boxd = getpid();
	pid_t shim = fork();
	if (shim == 0) {
		pid_t command = fork();
		if (command == 0)
			_exit(command_checks(boxd, getppid(), boxd_thread_tid));
		int status = 0;
		waitpid(command, &status, 0);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 100);
	}
	int status = 0;
	waitpid(shim, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "command filter: %d checks failed (status %d)",
	      WIFEXITED(status) ? WEXITSTATUS(status) : -1, status);
}

/* Exits a sandboxed child without libc or ASan's exit path (the leak checker
 * clones a thread, which a worker policy refuses). */
static void exit_now(int status)
{
	syscall(SYS_exit_group, status);
}

/* Runs `body` in a child under a worker policy; returns its wait status. */
static int run_worker(bool debug, const char *extra, void (*body)(void), char *output, size_t size)
{
	int pipes[2];
	if (pipe(pipes) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pipes[1], STDERR_FILENO);
		struct sandbox_policy *policy = sandbox_policy_new("test");
		sandbox_policy_set_debug(policy, debug);
		sandbox_policy_allow(policy, sandbox_base_syscalls);
		if (extra)
			sandbox_policy_allow(policy, (const char *const[]){extra, NULL});
		char error[256];
		if (!sandbox_policy_install(policy, error, sizeof error)) {
			dprintf(STDERR_FILENO, "%s\n", error);
			_exit(42);
		}
		body();
		exit_now(0);
	}
	close(pipes[1]);
	ssize_t n = read(pipes[0], output, size - 1);
	output[n > 0 ? n : 0] = '\0';
	close(pipes[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	return status;
}

static void forbidden_call(void)
{
	syscall(SYS_getppid);
}

static void probe_call(void)
{
	long rc = syscall(SYS_openat, -100, "/etc/passwd", 0);
	exit_now(rc == -1 && errno == EACCES ? 0 : 1);
}

static void test_worker_policy(void)
{
	char output[512];
	int status = run_worker(false, NULL, forbidden_call, output, sizeof output);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS, "forbidden syscall: status %d", status);
	status = run_worker(true, NULL, forbidden_call, output, sizeof output);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == SANDBOX_DEBUG_EXIT, "debug: status %d", status);
	CHECK(strstr(output, "sandbox test: forbidden syscall getppid (") != NULL, "debug said: %s", output);
	status = run_worker(false, NULL, probe_call, output, sizeof output);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "probe openat: status %d", status);
	status = run_worker(false, "getppid", forbidden_call, output, sizeof output);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "allowed getppid: status %d", status);
	status = run_worker(false, "no_such_syscall", forbidden_call, output, sizeof output);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 42, "bad rule: status %d", status);
	CHECK(strstr(output, "unknown syscall `no_such_syscall`") != NULL, "bad rule said: %s", output);
}

static void test_capabilities(void)
{
	char text[256];
	capabilities_describe(text, sizeof text);
	printf("kept capabilities: %s\n", text);
	CHECK(strstr(text, "cap_kill") && !strstr(text, "cap_sys_admin"), "described set: %s", text);
	if (geteuid() != 0) {
		printf("capability drop: skipped (not root)\n");
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		char error[256];
		if (!capabilities_drop(error, sizeof error))
			_exit(10);
		cap_t caps = cap_get_proc();
		cap_flag_value_t admin = CAP_SET, kill_cap = CAP_CLEAR;
		cap_get_flag(caps, CAP_SYS_ADMIN, CAP_PERMITTED, &admin);
		cap_get_flag(caps, CAP_KILL, CAP_EFFECTIVE, &kill_cap);
		if (admin == CAP_SET || kill_cap != CAP_SET)
			_exit(11);
		/* What a shim gets: a root exec regains the whole bounding set. */
		execl("/bin/sh", "sh", "-c", "e=$(grep CapEff /proc/self/status | cut -f2); "
		      "b=$(grep CapBnd /proc/self/status | cut -f2); [ \"$e\" = \"$b\" ]", (char *)NULL);
		_exit(12);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "capability drop: status %d", status);
}

int main(void)
{
	test_worker_policy();
	test_capabilities();
	test_command_filter();
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures != 0;
}
