/* shim-run.c: starting the command and signalling its whole tree.
 *
 * The command is `bash -c 'eval "$(</dev/fd/3)" 3<&-'` with the command text
 * in a memfd on fd 3: the shell's command line never holds the text, so
 * `pkill -f PATTERN` in a command cannot match its own shell. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/close_range.h>
#include <linux/sched.h>

#include "protected.h"
#include "shim.h"
#include "text.h"
#include "xalloc.h"

static const char shell_program[] = "eval \"$(</dev/fd/3)\" 3<&-";

/* The child reports a failure before exec as "code\tsentence" on a CLOEXEC
 * pipe; an empty pipe at EOF means exec succeeded. */
static void __attribute__((noreturn)) child_fail(int report, const char *code,
						 const char *what, int error)
{
	char text[512];
	int n = snprintf(text, sizeof text, "%s\t%s: %s", code, what, strerror(error));
	ssize_t unused = write(report, text, (size_t)n);
	(void)unused;
	_exit(127);
}

static void child_reset_signals(void)
{
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
}

/* boxd runs with OOMScoreAdjust=-1000 and everything it starts inherits
 * that: left so, a runaway build would make the kernel's OOM killer pick
 * anything but it. Commands get a positive score instead (raising it needs
 * no privilege), so the kernel kills a command, never boxd or a shim. */
#define COMMAND_OOM_SCORE_ADJ "500"

static void raise_oom_score(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t unused = write(fd, COMMAND_OOM_SCORE_ADJ, sizeof COMMAND_OOM_SCORE_ADJ - 1);
		(void)unused;
		close(fd);
	}
}

static void __attribute__((noreturn))
child_run(struct shim *shim, int report, int guard_channel, int fds[3], int script)
{
	struct shim_spec *spec = &shim->spec;
	child_reset_signals();
	struct cgroup_job join = shim->job;
	if (shim->born_in_cgroup)
		join.v2_dir = NULL;
	if (!cgroup_job_join(&join) && (join.v2_dir || join.pids_dir))
		child_fail(report, "internal", "cannot join the command's cgroup", errno);
	setpgid(0, 0);
	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			child_fail(report, "internal", "cannot set up stdio", errno);
	if (dup2(script, 3) < 0)
		child_fail(report, "internal", "cannot pass the command text", errno);
	/* Everything above fd 3 goes at exec, the report pipe included. */
	syscall(SYS_close_range, 4u, ~0u, CLOSE_RANGE_CLOEXEC);
	for (size_t i = 0; i < spec->rlimit_count; i++) {
		struct rlimit limit = {spec->rlimits[i].soft, spec->rlimits[i].hard};
		setrlimit(spec->rlimits[i].resource, &limit);
	}
	raise_oom_score();
	if (guard_channel >= 0 && !guard_install(guard_channel))
		child_fail(report, "internal", "cannot install the signal guard", errno);
	if (geteuid() == 0) {
		if (setgroups(spec->group_count, spec->groups) != 0 || setgid(spec->gid) != 0 ||
		    setuid(spec->uid) != 0)
			child_fail(report, "bad_request", "cannot switch to the user", errno);
	} else if (spec->uid != geteuid())
		child_fail(report, "bad_request", "boxd is not root and cannot run as another user",
			   EPERM);
	if (chdir(spec->cwd) != 0)
		child_fail(report, errno == ENOENT ? "cwd_not_found" : "bad_request",
			   spec->cwd, errno);
	char *argv[] = {"bash", "-c", (char *)shell_program, NULL};
	char **env = xcalloc(spec->env_count + 1, sizeof *env);
	size_t n = 0;
	for (size_t i = 0; i < spec->env_count; i++)
		/* No startup file of any kind: non-interactive bash reads BASH_ENV. */
		if (strncmp(spec->env[i], "BASH_ENV=", 9) && strncmp(spec->env[i], "ENV=", 4))
			env[n++] = spec->env[i];
	execve("/bin/bash", argv, env);
	child_fail(report, "internal", "cannot run /bin/bash", errno);
}

/* fork(), but born in the command's cgroup v2 where the kernel can
 * (CLONE_INTO_CGROUP): moving a process later takes a lock that costs
 * milliseconds. The child then skips its own move into that cgroup. */
static pid_t spawn_child(struct shim *shim)
{
	if (shim->job.v2_dir) {
		int dir = open(shim->job.v2_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct clone_args args = {.flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD,
					  .cgroup = (uint64_t)dir};
		pid_t pid = dir >= 0 ? (pid_t)syscall(SYS_clone3, &args, sizeof args) : -1;
		if (dir >= 0)
			close(dir);
		if (pid >= 0) {
			shim->born_in_cgroup = true;
			return pid;
		}
	}
	return fork();
}

static int make_script(const char *cmd)
{
	int fd = memfd_create("command", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t length = strlen(cmd), done = 0;
	while (done < length) {
		ssize_t n = write(fd, cmd + done, length - done);
		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static bool make_pipe(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC) != 0)
		return false;
	/* A big pipe means fewer wakeups for a chatty command. */
	fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
	return true;
}

static void close_pair(int fds[2])
{
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Reads the child's report: empty means it exec'd. */
static bool read_report(int report, char *code, size_t code_size, char *error, size_t error_size)
{
	char text[512];
	ssize_t n;
	do
		n = read(report, text, sizeof text - 1);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return true;
	text[n] = '\0';
	char *tab = strchr(text, '\t');
	if (tab)
		*tab = '\0';
	snprintf(code, code_size, "%s", text);
	return text_fail(error, error_size, "%s", tab ? tab + 1 : "the command could not start");
}

bool run_start(struct shim *shim, char *code, size_t code_size, char *error, size_t error_size)
{
	int out[2] = {-1, -1}, err[2] = {-1, -1}, in[2] = {-1, -1}, report[2] = {-1, -1};
	int guard[2] = {-1, -1};
	int script = make_script(shim->spec.cmd);
	bool ok = script >= 0 && make_pipe(out) && make_pipe(err) && make_pipe(report) &&
		  socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, guard) == 0;
	if (ok && shim->spec.stdin_data)
		ok = make_pipe(in);
	else if (ok)
		ok = (in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;
	if (!ok) {
		snprintf(code, code_size, "internal");
		return text_fail(error, error_size, "cannot set up the command's pipes: %s", strerror(errno));
	}
	pid_t pid = spawn_child(shim);
	if (pid == 0) {
		int fds[3] = {in[0], out[1], err[1]};
		child_run(shim, report[1], guard[1], fds, script);
	}
	close(report[1]);
	close(guard[1]);
	close(out[1]);
	close(err[1]);
	close(in[0]);
	close(script);
	if (pid < 0) {
		snprintf(code, code_size, "internal");
		snprintf(error, error_size, "cannot fork: %s", strerror(errno));
		close_pair((int[2]){out[0], err[0]});
		return false;
	}
	shim->pid = pid;
	shim->guard_fd = guard_receive(guard[0]);
	close(guard[0]);
	ok = read_report(report[0], code, code_size, error, error_size);
	close(report[0]);
	shim->out.fd = out[0];
	shim->err.fd = err[0];
	shim->stdin_fd = shim->spec.stdin_data ? in[1] : -1;
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	if (shim->stdin_fd >= 0)
		fcntl(shim->stdin_fd, F_SETFL, O_NONBLOCK);
	return ok;
}

/* Without a cgroup: every process whose parent chain leads to the shim. */
static void signal_descendants(pid_t root, int signal)
{
	DIR *proc = opendir("/proc");
	if (!proc)
		return;
	size_t count = 0, capacity = 256;
	pid_t(*pairs)[2] = xmalloc(capacity * sizeof *pairs);
	struct dirent *entry;
	while ((entry = readdir(proc))) {
		pid_t pid = (pid_t)atoi(entry->d_name);
		if (pid <= 0)
			continue;
		char path[64], text[512];
		snprintf(path, sizeof path, "/proc/%d/stat", pid);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		size_t n = fread(text, 1, sizeof text - 1, f);
		fclose(f);
		text[n] = '\0';
		char *close_paren = strrchr(text, ')');
		int parent;
		if (!close_paren || sscanf(close_paren + 2, "%*c %d", &parent) != 1)
			continue;
		if (count == capacity)
			pairs = xrealloc(pairs, (capacity *= 2) * sizeof *pairs);
		pairs[count][0] = pid;
		pairs[count][1] = parent;
		count++;
	}
	closedir(proc);
	/* Mark descendants breadth first: a pid joins when its parent is in. */
	pid_t *tree = xmalloc((count + 1) * sizeof *tree);
	size_t members = 0;
	tree[members++] = root;
	for (size_t done = 0; done < members; done++)
		for (size_t i = 0; i < count; i++)
			if (pairs[i][1] == tree[done])
				tree[members++] = pairs[i][0];
	for (size_t i = 1; i < members; i++)
		kill(tree[i], signal);
	free(tree);
	free(pairs);
}

void run_signal_tree(struct shim *shim, int signal)
{
	/* A command may have moved boxd (or a shim) into its cgroup: send it
	 * home first, or it would die with the command. */
	if (shim->job.v2_dir && shim->spec.protected_dir)
		protected_rescue(shim->spec.protected_dir, shim->job.v2_dir);
	if (shim->pid > 0 && !shim->exited)
		kill(-shim->pid, signal);
	if (cgroup_job_signal(&shim->job, signal) < 0)
		signal_descendants(getpid(), signal);
}
