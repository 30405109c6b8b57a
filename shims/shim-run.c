/* shim-run.c: starting the command and signalling its whole tree.
 *
 * The command is `bash -c 'eval "$(</dev/fd/3)" 3<&-'` with the command text
 * in a memfd on fd 3: the shell's command line never holds the text, so
 * `pkill -f PATTERN` in a command cannot match its own shell. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/close_range.h>
#include <linux/sched.h>

#include "clock.h"
#include "fd-passing.h"
#include "protected.h"
#include "shim-protocol.h"
#include "shim.h"
#include "text.h"
#include "xalloc.h"

static const char shell_program[] = "eval \"$(</dev/fd/3)\" 3<&-";

/* The child reports a failure before exec as "code\tsentence" on a CLOEXEC
 * pipe; an empty pipe at EOF means exec succeeded. */
static void __attribute__((noreturn))
child_fail(int report, const char *code, const char *what, int error)
{
	char text[512];
	int n = snprintf(text, sizeof text, "%s\t%s: %s", code, what, strerror(error));
	ssize_t unused = write(report, text, (size_t)n);
	(void)unused;
	_exit(127);
}

/* exec keeps only ignored dispositions and the mask: the shim's, undone. */
static void child_reset_signals(void)
{
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (size_t i = 0; i < shim_ignored_signal_count; i++)
		signal(shim_ignored_signals[i], SIG_DFL);
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

/* `ahead`: a seed, whose signals and OOM score were set while it waited. */
static void __attribute__((noreturn))
child_run(struct shim *shim, int report, int guard_channel, int fds[3], int script, bool ahead)
{
	struct shim_spec *spec = &shim->spec;
	if (!ahead)
		child_reset_signals();
	struct cgroup_job join = shim->job;
	if (shim->born_in_cgroup)
		join.v2_dir = NULL;
	if (shim->pids_joined)
		join.pids_dir = NULL; /* a seed joined it ahead */
	if (!cgroup_job_join(&join) && (join.v2_dir || join.pids_dir))
		child_fail(report, "internal", "cannot join the command's cgroup", errno);
	/* A terminal's command leads a session of its own, the terminal its
	 * controlling one (setsid there: a group leader could not); any other
	 * a process group, so signals reach its whole job. */
	bool terminal = spec->pty_cols != 0;
	if (!terminal)
		setpgid(0, 0);
	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			child_fail(report, "internal", "cannot set up stdio", errno);
	if (terminal && !terminal_adopt_in_child())
		child_fail(report, "internal", "cannot make the terminal the command's own", errno);
	if (dup2(script, 3) < 0)
		child_fail(report, "internal", "cannot pass the command text", errno);
	/* Everything above fd 3 goes at exec, the report pipe included. */
	syscall(SYS_close_range, 4u, ~0u, CLOSE_RANGE_CLOEXEC);
	for (size_t i = 0; i < spec->rlimit_count; i++) {
		struct rlimit limit = {spec->rlimits[i].soft, spec->rlimits[i].hard};
		setrlimit(spec->rlimits[i].resource, &limit);
	}
	if (!ahead)
		raise_oom_score();
	if (guard_channel >= 0 && !guard_install(guard_channel, shim->prep.guard_filter))
		child_fail(report, "internal", "cannot install the signal guard", errno);
	if (geteuid() == 0) {
		if (setgroups(spec->group_count, spec->groups) != 0 || setgid(spec->gid) != 0 ||
		    setuid(spec->uid) != 0)
			child_fail(report, "bad_request", "cannot switch to the user", errno);
	} else if (spec->uid != geteuid())
		child_fail(report, "bad_request", "boxd is not root and cannot run as another user",
			   EPERM);
	if (chdir(spec->cwd) != 0)
		child_fail(report, errno == ENOENT ? "cwd_not_found" : "bad_request", spec->cwd,
			   errno);
	char *argv[] = {"bash", "-c", (char *)shell_program, NULL};
	prctl(PR_SET_PDEATHSIG, 0); /* a seed's: the command outlives a killed shim, as ever */
	char **env = xcalloc(spec->env_count + 1, sizeof *env);
	size_t n = 0;
	for (size_t i = 0; i < spec->env_count; i++)
		/* No startup file of any kind: non-interactive bash reads BASH_ENV. */
		if (strncmp(spec->env[i], "BASH_ENV=", 9) && strncmp(spec->env[i], "ENV=", 4))
			env[n++] = spec->env[i];
	execve("/bin/bash", argv, env);
	child_fail(report, "internal", "cannot run /bin/bash", errno);
}

/* Set once a child cloned into its cgroup was killed at birth: kernels
 * with the kill-sequence check (6.13 and later, and stable backports) kill
 * a child cloned with CLONE_INTO_CGROUP into a cgroup whose cgroup.kill
 * count differs from its parent's, which is so for good once the shims'
 * cgroup (or the command's) has been killed. From then on this process
 * forks and has the child join its cgroup (cgroup_job_join), as without
 * cgroup v2; a fork is never killed that way. */
static bool clone_into_kills;

/* fork(), but born in the command's cgroup v2 where the kernel can
 * (CLONE_INTO_CGROUP): moving a process later takes a lock that costs
 * milliseconds. The child then skips its own move into that cgroup. */
static pid_t spawn_child(struct shim *shim)
{
	shim->born_in_cgroup = false;
	for (int round = 0; round < 2 && shim->job.v2_dir && !clone_into_kills; round++) {
		int dir = shim->prep.cgroup_fd;
		struct clone_args args = {.flags = CLONE_INTO_CGROUP,
					  .exit_signal = SIGCHLD,
					  .cgroup = (uint64_t)dir};
		pid_t pid = dir >= 0 ? (pid_t)syscall(SYS_clone3, &args, sizeof args) : -1;
		if (pid >= 0) {
			shim->born_in_cgroup = true;
			return pid;
		}
		/* The cgroup made ahead was removed from outside (ENODEV): the
		 * command gets one made now, with its limits, or none below. */
		if (round > 0 || !prepare_cgroup_again(shim))
			break;
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

/* ---- the seed ----
 *
 * The command's first process, forked by a spare ahead of the command into
 * the cgroups made for it (v2 by CLONE_INTO_CGROUP; the v1 pids one, on
 * hybrid hosts, joined here, which costs the cgroup migration lock), with
 * its OOM score raised, its own process group and the signal guard
 * installed. It waits on a socket whose
 * other end boxd made and holds (shim-protocol.h) for the same spec the shim
 * gets, and then does
 * what a forked child does (child_run) with nothing forked: the start of a
 * foreground command is boxd's message to it, its exec, and the shim waking
 * beside it. A seed that did not get the spec is killed (seed_stop); one
 * whose socket ends (boxd went away) leaves by itself. */
static void __attribute__((noreturn)) seed_main(struct shim *shim, int socket, pid_t shim_pid)
{
	struct shim_prepared *p = &shim->prep;
	child_reset_signals();
	/* A seed never runs a command without its shim: it dies with it while
	 * it waits, and checks again once it has the spec (boxd would have
	 * given the command to another spare by then). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != shim_pid)
		_exit(0);
	/* None of the shim's own ends: its channel and socket must end with
	 * the shim, whatever a waiting seed does. */
	int *theirs[] = {&shim->channel, &shim->listen_fd, &p->state_fd, &p->meta_fd,
			 &p->cgroup_fd,  &p->out[0],       &p->err[0],   &p->in[1],
			 &p->report[0],  &p->guard[0]};
	for (size_t i = 0; i < sizeof theirs / sizeof theirs[0]; i++)
		if (*theirs[i] >= 0) {
			close(*theirs[i]);
			*theirs[i] = -1;
		}
	if (shim->job.pids_dir && cgroup_move(shim->job.pids_dir, getpid()))
		shim->pids_joined = true;
	setpgid(0, 0);
	raise_oom_score();
	/* The signal guard is the same for every command: installed while the
	 * seed waits, its listener waits in the shim's channel until the start. */
	bool guarded = guard_install(p->guard[1], p->guard_filter);
	char tag = 0;
	int spec_fd = fd_passing_receive(socket, &tag);
	if (spec_fd < 0 || tag != SHIM_MSG_SPEC || getppid() != shim_pid)
		_exit(0); /* boxd went away, gave the command to the shim alone, or the shim died */
	close(socket);
	struct shim_spec spec;
	char error[512];
	if (!shim_spec_read(&spec, spec_fd, error, sizeof error))
		child_fail(p->report[1], "internal", error, EINVAL);
	close(spec_fd);
	shim_spec_free(&shim->spec);
	shim->spec = spec;
	/* Before anything of the command runs, as the shim would have. */
	if (spec.memory_max && !cgroup_job_set_memory_max(&shim->job, spec.memory_max))
		child_fail(p->report[1], "bad_request",
			   "memoryMaxBytes cannot be enforced: the "
			   "command's cgroup takes no memory.max",
			   errno);
	int script = make_script(spec.cmd);
	if (script < 0)
		child_fail(p->report[1], "internal", "cannot pass the command text", errno);
	int fds[3] = {spec.stdin_data || spec.stdin_stream ? p->in[0] : p->null_fd, p->out[1],
		      p->err[1]};
	child_run(shim, p->report[1], guarded ? -1 : p->guard[1], fds, script, true);
}

void seed_start(struct shim *shim)
{
	struct shim_prepared *p = &shim->prep;
	int socket = p->seed_socket;
	p->seed_socket = -1;
	if (socket < 0)
		return;
	pid_t shim_pid = getpid();
	int dir = p->cgroup_fd;
	struct clone_args args = {
		.flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = (uint64_t)dir};
	bool into = dir >= 0 && !clone_into_kills;
	pid_t pid = into ? (pid_t)syscall(SYS_clone3, &args, sizeof args) : -1;
	if (pid < 0 && !shim->job.v2_dir) {
		into = false; /* no v2 cgroup here: a plain fork */
		pid = fork();
	}
	/* Else no seed: one moved into the v2 cgroup would pay the very cost
	 * it is there to save. boxd's sends to its socket then fail, or are
	 * dropped with this end, and the shim forks the command itself. */
	if (pid == 0) {
		shim->born_in_cgroup = into;
		seed_main(shim, socket, shim_pid);
	}
	if (pid > 0) {
		p->seed = pid;
		shim->born_in_cgroup = into; /* for seed_stop; spawn_child sets it anew */
		/* Out of other commands' reach while it waits (a stop or a
		 * trace would hold its command's start), as its shim is. */
		if (shim->spec.protected_dir && protected_add(shim->spec.protected_dir, pid))
			p->protected_seed = pid;
	}
	close(socket);
}

void seed_unprotect(struct shim *shim)
{
	if (shim->prep.protected_seed > 0 && shim->spec.protected_dir)
		protected_remove(shim->spec.protected_dir, shim->prep.protected_seed);
	shim->prep.protected_seed = 0;
}

/* A child that died of SIGKILL without having sent its guard listener
 * (nothing waits on `guard`, the shim's end) never reached its exec: no
 * command killed it (it had no command yet), the kernel did at its birth. */
static bool killed_before_guard(int status, int guard)
{
	char byte;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
	       recv(guard, &byte, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

void seed_stop(struct shim *shim)
{
	seed_unprotect(shim);
	if (shim->prep.seed <= 0)
		return;
	int status;
	if (waitpid(shim->prep.seed, &status, WNOHANG) == shim->prep.seed) {
		/* Dead before its command came: killed at birth, the command's
		 * fork must not be cloned into the cgroup either. */
		if (shim->born_in_cgroup && killed_before_guard(status, shim->prep.guard[0]))
			clone_into_kills = true;
		shim->prep.seed = 0;
		return;
	}
	kill(shim->prep.seed, SIGKILL);
	waitpid(shim->prep.seed, NULL, 0);
	shim->prep.seed = 0;
}

/* ---- a bounded start ----
 *
 * Until its exec the command's first process (the seed, or a fresh fork)
 * is within reach of other commands: `kill -STOP`, a write of 1 to its
 * cgroup's cgroup.freeze, a ptrace attach. The shim must not wait on it
 * without bound, since its timeout is armed only once the start is done.
 * So the shim waits for the guard's listener and the report with poll();
 * without news after START_NUDGE_MS it sends SIGCONT and thaws the cgroup
 * (again every START_NUDGE_MS), and at START_BOUND_MS it kills the child.
 * A child that never exec'd is replaced by a fresh fork once (a command is
 * never run twice); otherwise the start fails. The bound is generous: a
 * loaded 2-vCPU VM can take a second or more to fork and exec, and a start
 * past it only costs a second fork. The usual start waits as before. */
#define START_NUDGE_MS 200
#define START_BOUND_MS 5000
/* How long a child killed at the bound may take to be seen dead. */
#define START_REAP_MS 1000

enum start_news {
	START_EXECED,    /* it exec'd the command (or died after it had its guard) */
	START_FAILED,    /* it reported why it could not */
	START_NEVER_RAN, /* dead, or killed by us, before its exec: start again */
	START_HELD,      /* held past the bound, and not known not to have exec'd */
};

/* The shim's ends of the child's report and guard channel, and what came. */
struct start_watch {
	int report, guard;
	int listener;   /* the guard's listener, -1 until it came */
	char text[512]; /* the report: empty when it exec'd */
	size_t length;
	bool killed_unguarded; /* died of SIGKILL before it sent the listener */
};

static void watch_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* What another command may have done to the child: undone. */
static void nudge(const struct shim *shim, pid_t pid)
{
	kill(pid, SIGCONT);
	if (shim->job.v2_dir)
		cgroup_job_thaw(&shim->job);
}

/* Reads what came on the readable ends. */
static void watch_read(struct start_watch *w, const struct pollfd ready[2])
{
	if (ready[0].revents) {
		w->listener = fd_passing_receive(w->guard, NULL);
		if (w->listener >= 0)
			fcntl(w->listener, F_SETFL, O_NONBLOCK);
		watch_close(&w->guard); /* one listener; nothing else comes */
	}
	if (ready[1].revents) {
		ssize_t n = read(w->report, w->text + w->length, sizeof w->text - 1 - w->length);
		if (n > 0)
			w->length += (size_t)n;
		if (n == 0 || (n < 0 && errno != EINTR) || w->length == sizeof w->text - 1)
			watch_close(&w->report);
	}
}

/* The command name of `pid` (a zombie keeps it): ours until it exec'd. */
static bool same_comm(pid_t pid)
{
	char path[64], theirs[32] = "", ours[32] = "";
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "re");
	if (f) {
		if (!fgets(theirs, sizeof theirs, f))
			theirs[0] = '\0';
		fclose(f);
	}
	f = fopen("/proc/self/comm", "re");
	if (f) {
		if (!fgets(ours, sizeof ours, f))
			ours[0] = '\0';
		fclose(f);
	}
	return theirs[0] && !strcmp(theirs, ours);
}

/* True when the child `pid` has ended within `ms` (not reaped: a zombie).
 * Bounded: a child traced by another command is reported to its tracer
 * first, and to us only once the tracer has reaped it. */
static bool ended_within(pid_t pid, int ms)
{
	int handle = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd gone = {.fd = handle, .events = POLLIN};
	bool ended = handle >= 0 && poll(&gone, 1, ms) == 1;
	if (handle >= 0)
		close(handle);
	return ended;
}

/* Kills a child held past the bound: NEVER_RAN when it ended without
 * having exec'd (a zombie still has its name from before), else HELD. */
static enum start_news kill_held(pid_t pid)
{
	kill(pid, SIGKILL);
	return ended_within(pid, START_REAP_MS) && same_comm(pid) ? START_NEVER_RAN : START_HELD;
}

/* Waits, bounded, for the child to exec or fail (see above). */
static enum start_news start_wait(const struct shim *shim, pid_t pid, struct start_watch *w)
{
	int64_t begun = clock_monotonic_ms(), next_nudge = begun + START_NUDGE_MS;
	while (w->report >= 0 || w->guard >= 0) {
		int64_t now = clock_monotonic_ms();
		if (now >= begun + START_BOUND_MS)
			return kill_held(pid);
		if (now >= next_nudge) {
			nudge(shim, pid);
			next_nudge = now + START_NUDGE_MS;
		}
		struct pollfd ready[2] = {{w->guard, POLLIN, 0}, {w->report, POLLIN, 0}};
		int wait = (int)(next_nudge - now);
		if (poll(ready, 2, wait) > 0)
			watch_read(w, ready);
	}
	if (w->length)
		return START_FAILED;
	/* The report ended empty: exec'd, or died before. Without a listener
	 * it never got as far as its guard, let alone its exec: dead (its
	 * report ends only so), and no command ran. */
	siginfo_t info = {0};
	if (w->listener >= 0 || !ended_within(pid, START_REAP_MS) ||
	    waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != pid)
		return START_EXECED;
	w->killed_unguarded = info.si_code == CLD_KILLED && info.si_status == SIGKILL;
	return w->killed_unguarded ? START_NEVER_RAN : START_EXECED;
}

/* The report's "code\tsentence" as the start's failure. */
static bool start_failed(struct start_watch *w, char *code, size_t code_size, char *error,
			 size_t error_size)
{
	w->text[w->length] = '\0';
	char *tab = strchr(w->text, '\t');
	if (tab)
		*tab = '\0';
	snprintf(code, code_size, "%s", w->text);
	return text_fail(error, error_size, "%s", tab ? tab + 1 : "the command could not start");
}

/* Forks the command; -1 with errno set. */
static pid_t fork_command(struct shim *shim)
{
	struct shim_prepared *p = &shim->prep;
	int script = make_script(shim->spec.cmd);
	if (script < 0)
		return -1;
	/* A terminal is made once, for the first child (a second one, after
	 * a first that died before its exec, gets the same). */
	int slave = -1;
	if (shim->spec.pty_cols && shim->pty_fd < 0 && !terminal_open(shim, &slave)) {
		int saved = errno;
		close(script);
		errno = saved;
		return -1;
	}
	if (shim->pty_fd >= 0 && slave < 0)
		slave = open(ptsname(shim->pty_fd), O_RDWR | O_NOCTTY | O_CLOEXEC);
	pid_t pid = spawn_child(shim);
	if (pid == 0) {
		bool piped = shim->spec.stdin_data || shim->spec.stdin_stream;
		int fds[3] = {piped ? p->in[0] : p->null_fd, p->out[1], p->err[1]};
		if (slave >= 0)
			fds[0] = fds[1] = fds[2] = slave;
		child_run(shim, p->report[1], p->guard[1], fds, script, false);
	}
	int saved = errno;
	close(script);
	if (slave >= 0)
		close(slave); /* the master reads EIO once the command's copies go */
	errno = saved;
	return pid;
}

/* A new report pipe and guard channel for a second child. */
static bool start_channels(struct shim_prepared *p)
{
	if (!guard_channel_renew(p->guard))
		return false;
	for (int i = 0; i < 2; i++)
		watch_close(&p->report[i]);
	return pipe2(p->report, O_CLOEXEC) == 0;
}

/* Starts the command in `pid` (the seed, or forked): true once it exec'd,
 * with shim->pid and shim->guard_fd set; shim->pid stays 0 when the child
 * is gone (reaped here) or out of reach. */
static bool start_settle(struct shim *shim, pid_t pid, char *code, size_t code_size, char *error,
			 size_t error_size)
{
	struct shim_prepared *p = &shim->prep;
	for (int attempt = 0;; attempt++) {
		/* Our copies of the child's ends go: each then ends with the
		 * child's (at its exec or its death). */
		watch_close(&p->report[1]);
		watch_close(&p->guard[1]);
		struct start_watch w = {
			.report = p->report[0], .guard = p->guard[0], .listener = -1};
		p->report[0] = p->guard[0] = -1;
		enum start_news news = start_wait(shim, pid, &w);
		watch_close(&w.report);
		watch_close(&w.guard);
		if (news == START_EXECED) {
			shim->pid = pid;
			shim->guard_fd = w.listener;
			return true;
		}
		watch_close(&w.listener);
		if (news == START_FAILED) {
			shim->pid = pid; /* reaped by the caller: it exits at once */
			return start_failed(&w, code, code_size, error, error_size);
		}
		if (news == START_HELD) {
			snprintf(code, code_size, "internal");
			return text_fail(
				error, error_size,
				"the command's first process (pid %d) was "
				"held before its exec for %d s (stopped, frozen or traced by "
				"another command) and killed",
				(int)pid, START_BOUND_MS / 1000);
		}
		seed_unprotect(shim);
		/* Ended: reaped now, or by the loop once a tracer let it go. */
		waitpid(pid, NULL, WNOHANG);
		if (shim->born_in_cgroup && w.killed_unguarded && attempt == 0)
			clone_into_kills = true; /* killed at birth: see spawn_child */
		snprintf(code, code_size, "internal");
		if (attempt > 0)
			return text_fail(error, error_size,
					 "the command's first process died before "
					 "its exec, twice");
		/* A seed that never ran the command: a fork of our own now, as
		 * if there had been no seed; the seed's memory.max goes first. */
		bool was_seeded = shim->seeded;
		shim->seeded = false;
		if (was_seeded && shim->spec.memory_max &&
		    !cgroup_job_set_memory_max(&shim->job, shim->spec.memory_max))
			return text_fail(error, error_size, "memoryMaxBytes cannot be enforced: %s",
					 strerror(errno));
		if (!start_channels(p))
			return text_fail(error, error_size, "cannot make the start's channels: %s",
					 strerror(errno));
		pid = fork_command(shim);
		if (pid < 0)
			return text_fail(error, error_size, "cannot fork: %s", strerror(errno));
	}
}

bool run_start(struct shim *shim, char *code, size_t code_size, char *error, size_t error_size)
{
	struct shim_prepared *p = &shim->prep;
	bool with_stdin = shim->spec.stdin_data != NULL;
	bool terminal = shim->spec.pty_cols != 0;
	pid_t pid;
	if (shim->seeded) {
		/* The seed has the spec too and is on its way to exec. */
		pid = p->seed;
		p->seed = 0;
		shim->born_in_cgroup = true;
	} else {
		pid = fork_command(shim);
	}
	bool ok;
	if (pid < 0) {
		snprintf(code, code_size, "internal");
		ok = text_fail(error, error_size, "cannot fork: %s", strerror(errno));
	} else {
		ok = start_settle(shim, pid, code, code_size, error, error_size);
	}
	/* The child's ends, the cgroup's fd: the shim needs them no more. */
	prepare_done(shim);
	shim->out.fd = p->out[0];
	shim->err.fd = p->err[0];
	p->out[0] = p->err[0] = -1;
	if (with_stdin)
		shim->stdin_fd = p->in[1];
	else if (shim->spec.stdin_stream && !terminal)
		shim->input_fd = p->in[1];
	else
		close(p->in[1]);
	p->in[1] = -1;
	if (terminal && shim->pty_fd >= 0) {
		/* One stream, the terminal's: its output is read from a copy of
		 * the master (reading ends at EIO, closing it), while the
		 * master itself stays for input, size and signals. */
		close(shim->out.fd);
		close(shim->err.fd);
		shim->err.fd = -1;
		shim->out.fd = fcntl(shim->pty_fd, F_DUPFD_CLOEXEC, 3);
		shim->input_fd = shim->pty_fd;
	}
	fcntl(shim->out.fd, F_SETFL, O_NONBLOCK);
	if (shim->err.fd >= 0)
		fcntl(shim->err.fd, F_SETFL, O_NONBLOCK);
	if (shim->stdin_fd >= 0)
		fcntl(shim->stdin_fd, F_SETFL, O_NONBLOCK);
	if (shim->input_fd >= 0)
		fcntl(shim->input_fd, F_SETFL, O_NONBLOCK);
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

void run_kill_descendants(void)
{
	signal_descendants(getpid(), SIGKILL);
}

void run_signal_tree(struct shim *shim, int signal)
{
	/* A command may have moved boxd (or a shim) into its cgroup, or into
	 * one below it (cgroup.kill reaches those too): send it home first, or
	 * it would die with the command. */
	if (shim->job.v2_dir && shim->spec.protected_dir)
		protected_rescue(shim->spec.protected_dir, shim->job.v2_dir);
	/* Frozen by another command, its processes would take SIGTERM only
	 * once thawed, and so skip the grace it gives them (SIGKILL, and
	 * cgroup.kill, end frozen processes all the same). */
	if (shim->job.v2_dir)
		cgroup_job_thaw(&shim->job);
	if (shim->pid > 0 && !shim->exited)
		kill(-shim->pid, signal);
	if (cgroup_job_signal(&shim->job, signal) < 0)
		signal_descendants(getpid(), signal);
}
