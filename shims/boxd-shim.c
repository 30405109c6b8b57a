/* boxd-shim: the parent of one command, outliving boxd.
 *
 * boxd starts it with the spec (shim-spec.h) on stdin and a pipe on stdout.
 * Or ahead of need, as a spare: stdin is then a socket; the spare detaches
 * at once and waits for the spec's descriptor on it (and leaves at its end,
 * when boxd goes), so a command's start does not wait for a shim's start.
 * The shim detaches (new session, forked away from boxd so nothing of boxd's
 * fate reaches it), starts the command, writes its meta file, then answers on
 * stdout with one line and closes it:
 *   "ready SHIM_PID COMMAND_PID STARTED_AT\n"  or  "error CODE SENTENCE\n"
 * From then on boxd talks to it over STATE_DIR/sock (shim-protocol.h). When
 * the shell exits, the shim finishes the log and the captures, then writes
 * STATE_DIR/exit (exit-record.h), then tells connected clients. It stays
 * while daemons the command left behind still run, logging their output,
 * until they end or the command's deadline ends them. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "exit-record.h"
#include "protected.h"
#include "shim-protocol.h"
#include "shim.h"
#include "xalloc.h"

#define SHIM_TERM_GRACE_MS 5000

static struct shim shim_state;

static void status_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void status_line(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof line - 2)
		n = (int)sizeof line - 2;
	/* One line: a sentence with a newline in it would end the answer early. */
	for (int i = 0; i < n; i++)
		if (line[i] == '\n')
			line[i] = ' ';
	line[n++] = '\n';
	ssize_t unused = write(STDOUT_FILENO, line, (size_t)n);
	(void)unused;
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	dup2(null, STDOUT_FILENO);
	close(null);
}

static char *state_path(const struct shim *shim, const char *name)
{
	return xasprintf("%s/%s", shim->spec.state_dir, name);
}

void shim_stop(struct shim *shim, int signal, int64_t grace_ms)
{
	run_signal_tree(shim, signal);
	if (signal != SIGKILL) {
		int64_t at = clock_monotonic_ms() + grace_ms;
		if (!shim->kill_at || at < shim->kill_at)
			shim->kill_at = at;
	}
}

static void drain(struct shim *shim)
{
	while (shim->out.fd >= 0 && output_read(shim, &shim->out)) {
		struct pollfd p = {.fd = shim->out.fd, .events = POLLIN};
		if (poll(&p, 1, 0) != 1)
			break;
	}
	while (shim->err.fd >= 0 && output_read(shim, &shim->err)) {
		struct pollfd p = {.fd = shim->err.fd, .events = POLLIN};
		if (poll(&p, 1, 0) != 1)
			break;
	}
}

/* The shell has exited: finish what a result needs, then write the record. */
static void record_exit(struct shim *shim)
{
	drain(shim);
	output_finish(shim);
	struct exit_record record = {
		.timed_out = shim->timed_out,
		.ended_at = clock_now_ms(),
		.duration_ms = clock_monotonic_ms() - shim->started_monotonic,
		.log_bytes = (int64_t)shim->log.total,
		.truncated = output_truncated(shim),
		.log_error = shim->log.error,
	};
	int status = shim->wait_status;
	if (WIFSIGNALED(status)) {
		record.signal = WTERMSIG(status);
		record.exit_code = 128 + record.signal;
	} else {
		record.exit_code = WEXITSTATUS(status);
		/* bash reports a command killed by signal N as 128+N (the shell
		 * itself exits normally): name the signal, as the API promises. */
		if (record.exit_code > 128 && record.exit_code - 128 <= 64)
			record.signal = record.exit_code - 128;
	}
	/* memory.oom.group is set: an OOM kill ends the whole tree, the shell
	 * too (SIGKILL, above). */
	record.oom_kills = cgroup_job_oom_kills(&shim->job);
	if (shim->timed_out)
		record.exit_code = 124;
	record.cpu_ms = cgroup_job_cpu_ms(&shim->job);
	if (record.cpu_ms < 0) {
		/* As subreaper the shim reaps the whole tree, so its children's
		 * usage covers every process that has ended. */
		struct rusage usage;
		getrusage(RUSAGE_CHILDREN, &usage);
		record.cpu_ms = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000 +
				(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000;
	}
	record.peak_memory_bytes = cgroup_job_peak_memory(&shim->job);
	char *path = state_path(shim, "exit");
	if (!exit_record_write(&record, path)) {
		/* A full disk, say. boxd would take a missing record for a shim
		 * killed from outside: the exit notice carries the record instead. */
		char *why = xasprintf("the exit record could not be written to %s: %s", path,
				      strerror(errno));
		record.message = why;
		shim->exit_notice = exit_record_format(&record, &shim->exit_notice_length);
		if (shim->exit_notice_length >= SHIM_MESSAGE_MAX) { /* a huge log error */
			free(shim->exit_notice);
			shim->exit_notice = NULL;
			shim->exit_notice_length = 0;
		}
		free(why);
	}
	free(path);
	shim->recorded = true;
	socket_send_exit(shim);
}

/* Reaps every child; returns true when none is left. */
static bool reap(struct shim *shim)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid == 0)
			return false;
		if (pid < 0)
			return errno == ECHILD;
		if (pid == shim->pid) {
			shim->exited = true;
			shim->wait_status = status;
		}
	}
}

static void write_stdin(struct shim *shim)
{
	size_t left = shim->spec.stdin_length - shim->stdin_written;
	ssize_t n = left ? write(shim->stdin_fd, shim->spec.stdin_data + shim->stdin_written, left)
			 : 0;
	if (n > 0)
		shim->stdin_written += (size_t)n;
	if (n < 0 && errno == EAGAIN)
		return;
	if (n <= 0 || shim->stdin_written == shim->spec.stdin_length) {
		close(shim->stdin_fd);
		shim->stdin_fd = -1;
	}
}

static void check_timers(struct shim *shim)
{
	int64_t now = clock_monotonic_ms();
	if (shim->timeout_at && now >= shim->timeout_at) {
		shim->timeout_at = 0;
		/* Past the shell's exit the deadline still covers what it left
		 * running (a fork bomb, a forgotten daemon); the record stands. */
		if (!shim->recorded)
			shim->timed_out = true;
		shim_stop(shim, SIGTERM, SHIM_TERM_GRACE_MS);
	}
	if (shim->held_until && now >= shim->held_until)
		shim->held_until = 0;
	if (shim->kill_at && now >= shim->kill_at) {
		shim->kill_at = 0;
		run_signal_tree(shim, SIGKILL);
	}
}

static int next_timeout(const struct shim *shim)
{
	int64_t next = 0;
	if (shim->timeout_at)
		next = shim->timeout_at;
	if (shim->kill_at && (!next || shim->kill_at < next))
		next = shim->kill_at;
	if (shim->held_until && (!next || shim->held_until < next))
		next = shim->held_until;
	if (!next)
		return -1; /* idle means idle: no timer without a deadline */
	int64_t wait = next - clock_monotonic_ms();
	return wait < 0 ? 0 : wait > 60000 ? 60000 : (int)wait;
}

enum { SLOT_SIGNAL, SLOT_OUT, SLOT_ERR, SLOT_STDIN, SLOT_LISTEN, SLOT_GUARD, SLOT_CLIENTS };

/* "SIGNAL GRACE_MS" from boxd (SHIM_MSG_STOP). */
static void handle_stop(struct shim *shim, const char *payload, size_t length)
{
	char text[64];
	if (length >= sizeof text)
		return;
	memcpy(text, payload, length);
	text[length] = '\0';
	char name[32];
	long long grace = 5000;
	if (sscanf(text, "%31s %lld", name, &grace) < 1)
		return;
	int number = signal_number(name);
	if (number > 0)
		shim_stop(shim, number, grace < 0 ? 0 : grace);
}

/* What a client asked of the loop itself (shim-socket.c only parses). */
static void handle_request(struct shim *shim, const struct shim_request *request)
{
	if (request->kind == SHIM_MSG_STOP)
		handle_stop(shim, request->payload, request->length);
	else if (request->kind == SHIM_MSG_SECRETS)
		output_set_secrets(shim, request->payload, request->length);
}

static void loop(struct shim *shim, int signal_fd)
{
	bool childless = false;
	while (!(shim->recorded && shim->out.fd < 0 && shim->err.fd < 0 && childless)) {
		struct pollfd p[SLOT_CLIENTS + SHIM_MAX_CLIENTS];
		p[SLOT_SIGNAL] = (struct pollfd){signal_fd, POLLIN, 0};
		bool held = shim->held_until != 0;
		p[SLOT_OUT] = (struct pollfd){held ? -1 : shim->out.fd, POLLIN, 0};
		p[SLOT_ERR] = (struct pollfd){held ? -1 : shim->err.fd, POLLIN, 0};
		p[SLOT_STDIN] = (struct pollfd){shim->stdin_fd, POLLOUT, 0};
		p[SLOT_LISTEN] = (struct pollfd){shim->listen_fd, POLLIN, 0};
		p[SLOT_GUARD] = (struct pollfd){shim->guard_fd, POLLIN, 0};
		for (int i = 0; i < SHIM_MAX_CLIENTS; i++)
			p[SLOT_CLIENTS + i] = (struct pollfd){shim->clients[i].fd, POLLIN, 0};
		int ready = poll(p, SLOT_CLIENTS + SHIM_MAX_CLIENTS, next_timeout(shim));
		if (ready < 0 && errno != EINTR)
			break;
		if (p[SLOT_SIGNAL].revents) {
			struct signalfd_siginfo info;
			while (read(signal_fd, &info, sizeof info) > 0)
				;
			childless = reap(shim);
		}
		if (p[SLOT_GUARD].revents & POLLIN)
			guard_answer(shim);
		else if (p[SLOT_GUARD].revents && shim->guard_fd >= 0) {
			close(shim->guard_fd); /* every filtered process is gone */
			shim->guard_fd = -1;
		}
		if (p[SLOT_OUT].revents)
			output_read(shim, &shim->out);
		if (p[SLOT_ERR].revents)
			output_read(shim, &shim->err);
		if (p[SLOT_STDIN].revents)
			write_stdin(shim);
		if (p[SLOT_LISTEN].revents)
			socket_accept(shim);
		for (int i = 0; i < SHIM_MAX_CLIENTS; i++) {
			struct shim_request request;
			if (p[SLOT_CLIENTS + i].revents && shim->clients[i].fd >= 0 &&
			    socket_read(shim, i, &request)) {
				handle_request(shim, &request);
				shim_request_free(&request);
			}
		}
		check_timers(shim);
		if (shim->exited && !shim->recorded && !shim->held_until)
			record_exit(shim);
	}
}

/* Detaches from boxd: a fork so the shim is not boxd's child (boxd never has
 * to reap it, and its death does not touch the shim), then a session of its
 * own. The forked child is never a group leader, so setsid() always works:
 * every shim leads its own session and process group, and no group signal
 * aimed at a command or at another shim's group can reach it. */
static void detach(void)
{
	pid_t pid = fork();
	if (pid < 0) {
		status_line("error internal cannot fork the shim: %s", strerror(errno));
		_exit(1);
	}
	if (pid > 0)
		_exit(0);
	setsid();
	prctl(PR_SET_CHILD_SUBREAPER, 1);
}

static int setup_signals(void)
{
	/* Stray signals do not end a shim: boxd stops commands over the socket. */
	int ignored[] = {SIGPIPE, SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};
	for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
		signal(ignored[i], SIG_IGN);
	sigset_t child;
	sigemptyset(&child);
	sigaddset(&child, SIGCHLD);
	sigprocmask(SIG_BLOCK, &child, NULL);
	return signalfd(-1, &child, SFD_CLOEXEC | SFD_NONBLOCK);
}

static bool start(struct shim *shim)
{
	char code[64] = "internal", error[768];
	log_file_open(&shim->log, shim->spec.log_path, shim->spec.log_cap_bytes);
	if (!cgroup_job_create(&shim->job, shim->spec.cgroup_base, shim->spec.pids_base,
			       shim->spec.id, shim->spec.pids_max, shim->spec.memory_max)) {
		status_line("error bad_request memoryMaxBytes cannot be enforced: the command's "
			    "cgroup takes no memory.max (%s)", strerror(errno));
		return false;
	}
	output_init(shim);
	shim->started_at = clock_now_ms();
	shim->started_monotonic = clock_monotonic_ms();
	if (!socket_listen(shim, error, sizeof error) ||
	    !run_start(shim, code, sizeof code, error, sizeof error)) {
		if (shim->pid > 0)
			waitpid(shim->pid, NULL, 0);
		cgroup_job_remove(&shim->job);
		status_line("error %s %s", code, error);
		return false;
	}
	if (shim->spec.hold_output)
		shim->held_until = shim->started_monotonic + SHIM_HOLD_MS;
	if (shim->spec.timeout_ms > 0)
		shim->timeout_at = shim->started_monotonic + shim->spec.timeout_ms;
	struct shim_meta meta = {
		.id = shim->spec.id, .cmd = output_mask_text(shim->spec.cmd),
		.cwd = output_mask_text(shim->spec.cwd),
		.user = shim->spec.user, .log_path = shim->spec.log_path,
		.cgroup = shim->job.v2_dir, .pids_cgroup = shim->job.pids_dir,
		.background = shim->spec.background, .started_at = shim->started_at,
		.timeout_ms = shim->spec.timeout_ms, .pid = shim->pid, .shim_pid = getpid(),
	};
	char *path = state_path(shim, "meta");
	bool written = shim_meta_write(&meta, path);
	int write_error = errno; /* before the cleanup below changes it */
	free(path);
	free(meta.cmd);
	free(meta.cwd);
	if (!written) {
		run_signal_tree(shim, SIGKILL);
		status_line("error internal cannot write the state of the command in %s: %s",
			    shim->spec.state_dir, strerror(write_error));
		return false;
	}
	/* From here on the shim's own commands may not signal it (nor may any
	 * other); it sits in its final cgroup by now. */
	if (shim->spec.protected_dir)
		protected_add(shim->spec.protected_dir, getpid());
	status_line("ready %d %d %lld", getpid(), shim->pid, (long long)shim->started_at);
	return true;
}

int main(int argc, char **argv)
{
	struct shim *shim = &shim_state;
	*shim = (struct shim){.stdin_fd = -1, .listen_fd = -1, .guard_fd = -1};
	shim->out.fd = shim->err.fd = -1;
	shim->out.kind = SHIM_MSG_STDOUT;
	shim->err.kind = SHIM_MSG_STDERR;
	char error[512];
	if (argc == 2 && !strcmp(argv[1], "--keep-cgroup"))
		return keep_cgroup();
	if (argc > 1) {
		fprintf(stderr, "usage: boxd-shim < SPEC (started by boxd; see shim-spec.h)\n"
			"       boxd-shim --keep-cgroup (boxd-commands.service)\n");
		return 2;
	}
	int signal_fd = setup_signals();
	struct stat input;
	bool spare = fstat(STDIN_FILENO, &input) == 0 && S_ISSOCK(input.st_mode);
	if (spare) {
		detach();
		int spec = receive_fd(STDIN_FILENO);
		if (spec < 0)
			return 0; /* boxd went away before it needed this spare */
		dup2(spec, STDIN_FILENO);
		close(spec);
	}
	if (!shim_spec_read(&shim->spec, STDIN_FILENO, error, sizeof error)) {
		status_line("error internal %s", error);
		return 1;
	}
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	dup2(null, STDIN_FILENO);
	close(null);
	if (!spare)
		detach();
	if (!start(shim))
		return 1;
	loop(shim, signal_fd);
	log_file_close(&shim->log);
	cgroup_job_remove(&shim->job);
	if (shim->spec.protected_dir)
		protected_remove(shim->spec.protected_dir, getpid());
	return 0;
}
