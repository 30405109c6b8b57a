/* boxd-shim: the parent of one command, outliving boxd.
 *
 * boxd starts it as `boxd-shim --spare` with a socketpair as its stdin (the
 * channel, shim-protocol.h), or has it forked by the spare maker
 * (`--spares`, shim-maker.c), ahead of need: the shim detaches at once, takes
 * the preparation boxd sends (SHIM_MSG_PREPARE) and makes everything a start
 * needs that does not depend on the command (shim-prepare.c), then waits for
 * the spec's descriptor (SHIM_MSG_SPEC), so a command's start pays for
 * neither the shim's own start nor that work. It leaves when boxd closes the
 * channel (or dies) first. The detaching (new session, forked away from boxd
 * so nothing of boxd's fate reaches it) keeps the shim from being boxd's
 * child. It starts the command, writes its meta file, then answers on the
 * channel with SHIM_MSG_READY (the meta) or SHIM_MSG_FAILED ("CODE
 * SENTENCE"), and the channel stays boxd's connection. Others (streams, a
 * boxd restarted) connect to STATE_DIR/sock. When the shell exits, the shim
 * finishes the log and the captures, then hands boxd the exit record
 * (SHIM_MSG_EXIT) and writes STATE_DIR/exit (exit-record.h). It stays while
 * daemons the command left behind still run, logging their output, until
 * they end or the command's deadline ends them.
 *
 * Started without --spare (by a boxd from before the channel, while a
 * package upgrade replaces this binary under it), the spec is on stdin (or
 * its descriptor on a socket there) and the answer one line on stdout:
 *   "ready SHIM_PID COMMAND_PID STARTED_AT\n"  or  "error CODE SENTENCE\n"
 * and the exit record and captures are files before SHIM_MSG_EXIT. */
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "clock.h"
#include "fd-passing.h"
#include "exit-record.h"
#include "fields.h"
#include "protected.h"
#include "shim-protocol.h"
#include "shim.h"
#include "xalloc.h"

#define SHIM_TERM_GRACE_MS 5000
/* A tree that outlived its SIGKILL is killed again this often. */
#define SHIM_KILL_AGAIN_MS 1000

static struct shim shim_state;

/* Stray signals do not end a shim: boxd stops commands over the socket. */
const int shim_ignored_signals[] = {SIGPIPE, SIGHUP,  SIGINT,  SIGTERM,
				    SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};
const size_t shim_ignored_signal_count =
	sizeof shim_ignored_signals / sizeof shim_ignored_signals[0];

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

/* The start's answer on the channel (or the old status line on stdout). */
static void answer_failed(struct shim *shim, const char *code, const char *sentence)
{
	if (shim->channel < 0) {
		status_line("error %s %s", code, sentence);
		return;
	}
	char *message = xasprintf("%c%s %s", SHIM_MSG_FAILED, code, sentence);
	ssize_t unused = send(shim->channel, message, strlen(message), MSG_NOSIGNAL);
	(void)unused;
	free(message);
}

static void answer_ready(struct shim *shim, const struct shim_meta *meta)
{
	if (shim->channel < 0) {
		status_line("ready %d %d %lld", getpid(), shim->pid, (long long)shim->started_at);
		return;
	}
	size_t length;
	char *fields = shim_meta_format(meta, &length);
	if (length + 1 > SHIM_MESSAGE_MAX) {
		/* A long command's text does not fit in one message: it is left
		 * out, and boxd reads it from the meta file written just before. */
		struct shim_meta short_meta = *meta;
		short_meta.cmd = NULL;
		free(fields);
		fields = shim_meta_format(&short_meta, &length);
	}
	char *message = xmalloc(length + 1);
	message[0] = SHIM_MSG_READY;
	memcpy(message + 1, fields, length);
	ssize_t unused = send(shim->channel, message, length + 1, MSG_NOSIGNAL);
	(void)unused;
	free(message);
	free(fields);
	/* From now on the channel is boxd's connection like any other: stops,
	 * new secrets, the exit notice (shim-socket.c). */
	int buffer = 1 << 20;
	setsockopt(shim->channel, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
	fcntl(shim->channel, F_SETFL, O_NONBLOCK);
	for (int i = 0; i < SHIM_MAX_CLIENTS; i++)
		if (shim->clients[i].fd < 0) {
			shim->clients[i] = (struct shim_client){.fd = shim->channel};
			break;
		}
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

/* The exit record as SHIM_MSG_EXIT carries it; NULL when too big (a huge
 * log error): boxd then reads the file. */
static void set_exit_notice(struct shim *shim, const struct exit_record *record)
{
	free(shim->exit_notice);
	shim->exit_notice = exit_record_format(record, &shim->exit_notice_length);
	if (shim->exit_notice_length >= SHIM_MESSAGE_MAX) {
		free(shim->exit_notice);
		shim->exit_notice = NULL;
		shim->exit_notice_length = 0;
	}
}

/* Writes STATE_DIR/exit; on failure the record in the notice says why. */
static bool write_exit_file(struct shim *shim, struct exit_record *record)
{
	char *path = state_path(shim, SHIM_STATE_EXIT);
	bool written = exit_record_write(record, path);
	if (!written) {
		/* A full disk, say. boxd would take a missing record for a shim
		 * killed from outside: the exit notice carries the record instead. */
		char *why = xasprintf("the exit record could not be written to %s: %s", path,
				      strerror(errno));
		free(record->message);
		record->message = why;
		set_exit_notice(shim, record);
	}
	free(path);
	return written;
}

/* The shell has exited: finish what a result needs, then hand over the
 * record. A foreground command's result is what its caller waits for, so
 * when the record and the captures fit in one message boxd gets them first
 * and the files follow (boxd checks they did once the shim is gone, and
 * writes the record itself if not: exec.c). Otherwise, and for a background
 * command (whose end nobody is waiting on), the files come first: their
 * presence means "ended" and the notice only says it. */
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
		.log_error = shim->log.error ? xstrdup(shim->log.error) : NULL,
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
	/* Room for the record's own fields beside the captures. */
	const size_t room = SHIM_MESSAGE_MAX - 4096;
	bool first = shim->channel >= 0 && !shim->spec.background &&
		     output_captures(shim, room, record.captures, record.capture_lengths);
	if (first) {
		record.has_captures = true;
		set_exit_notice(shim, &record);
		first = shim->exit_notice != NULL;
	}
	if (first) {
		shim->recorded = true;
		socket_send_exit(shim);
		write_exit_file(shim, &record);
	} else {
		exit_record_drop_captures(&record);
		record.has_captures = false;
		output_save_captures(shim);
		bool written = write_exit_file(shim, &record);
		/* The channel's boxd takes the record from the notice; an old
		 * boxd reads the file and wants the notice empty. */
		if (written && shim->channel >= 0)
			set_exit_notice(shim, &record);
		shim->recorded = true;
		socket_send_exit(shim);
	}
	exit_record_free(&record);
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
	ssize_t n =
		left ? write(shim->stdin_fd, shim->spec.stdin_data + shim->stdin_written, left) : 0;
	if (n > 0)
		shim->stdin_written += (size_t)n;
	if (n < 0 && errno == EAGAIN)
		return;
	if (n <= 0 || shim->stdin_written == shim->spec.stdin_length) {
		close(shim->stdin_fd);
		shim->stdin_fd = -1;
	}
}

/* True while the shim has a child (a live one, or one to reap). */
static bool has_children(void)
{
	siginfo_t info;
	return waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
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
		/* Again while anything of the tree lives, found by its parent
		 * chain too: a process forked at the moment of the kill escapes
		 * it on kernels without the kill sequence (before 6.14, a fork
		 * bomb would go on for good), and a descendant that left its
		 * cgroup and its session is still the command's. */
		if (shim->killed_once)
			run_kill_descendants();
		shim->killed_once = true;
		if (cgroup_job_populated(&shim->job) == 1 || has_children())
			shim->kill_at = now + SHIM_KILL_AGAIN_MS;
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

/* The end of the command's input: the pipe's last writer the shim holds
 * goes (boxd's copies are closed by boxd); a terminal gets its end-of-file
 * character, which a reading program sees as the end of its input. */
static void close_input(struct shim *shim)
{
	if (shim->input_fd < 0)
		return;
	if (shim->pty_fd >= 0) {
		struct termios modes;
		char eof = tcgetattr(shim->pty_fd, &modes) == 0 ? (char)modes.c_cc[VEOF] : '\x04';
		ssize_t unused = write(shim->pty_fd, &eof, 1);
		(void)unused;
		return;
	}
	close(shim->input_fd);
	shim->input_fd = -1;
}

/* "SIGNAL" from boxd (SHIM_MSG_SIGNAL): once, no SIGKILL after. */
static void handle_signal(struct shim *shim, const char *name)
{
	int number = signal_number(name);
	if (number <= 0)
		return;
	if (shim->pty_fd >= 0)
		terminal_signal(shim, number);
	else
		run_signal_tree(shim, number);
}

/* What a client asked of the loop itself (shim-socket.c only parses). */
static void handle_request(struct shim *shim, const struct shim_request *request)
{
	switch (request->kind) {
	case SHIM_MSG_STOP: handle_stop(shim, request->payload, request->length); break;
	case SHIM_MSG_SECRETS: output_set_secrets(shim, request->payload, request->length); break;
	case SHIM_MSG_CLOSE_STDIN: close_input(shim); break;
	case SHIM_MSG_RESIZE: terminal_resize(shim, request->payload); break;
	case SHIM_MSG_SIGNAL: handle_signal(shim, request->payload); break;
	}
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

/* A session of its own, and the subreaper of what it starts. A forked
 * child is never a group leader, so setsid() always works: every shim leads
 * its own session and process group, and no group signal aimed at a command
 * or at another shim's group can reach it. */
static void lead_session(void)
{
	setsid();
	prctl(PR_SET_CHILD_SUBREAPER, 1);
}

/* Detaches from boxd: a fork so the shim is not boxd's child (boxd never has
 * to reap it, and its death does not touch the shim), then its session. */
static void detach(void)
{
	pid_t pid = fork();
	if (pid < 0) {
		status_line("error internal cannot fork the shim: %s", strerror(errno));
		_exit(1);
	}
	if (pid > 0)
		_exit(0);
	lead_session();
}

static int setup_signals(void)
{
	for (size_t i = 0; i < shim_ignored_signal_count; i++)
		signal(shim_ignored_signals[i], SIG_IGN);
	sigset_t child;
	sigemptyset(&child);
	sigaddset(&child, SIGCHLD);
	sigprocmask(SIG_BLOCK, &child, NULL);
	return signalfd(-1, &child, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* Writes the meta file: into meta.tmp made ahead, else the slow way. */
static bool write_meta(struct shim *shim, const struct shim_meta *meta)
{
	struct shim_prepared *p = &shim->prep;
	if (p->meta_fd >= 0 && p->state_fd >= 0) {
		size_t length;
		struct fields_writer w = {0};
		w.data = shim_meta_format(meta, &length);
		w.length = w.capacity = length;
		bool ok = fields_write_into(&w, p->meta_fd, p->state_fd,
					    SHIM_STATE_TEMPORARY(SHIM_STATE_META), SHIM_STATE_META);
		int saved = errno;
		fields_writer_free(&w);
		close(p->meta_fd);
		p->meta_fd = -1;
		if (ok)
			return true;
		errno = saved;
		if (errno != ENOENT) /* meta.tmp removed from outside: the slow way */
			return false;
	}
	char *path = state_path(shim, SHIM_STATE_META);
	bool written = shim_meta_write(meta, path);
	free(path);
	return written;
}

/* Starts the command (what was prepared is in place) and answers boxd. */
static bool start(struct shim *shim)
{
	char code[64] = "internal", error[768];
	if (shim->prep.error) {
		prepare_remove_cgroups(shim);
		answer_failed(shim, shim->prep.code, shim->prep.error);
		return false;
	}
	/* A seed sets it itself, before the command's exec. */
	if (!shim->seeded && shim->spec.memory_max &&
	    !cgroup_job_set_memory_max(&shim->job, shim->spec.memory_max)) {
		char why[256];
		snprintf(why, sizeof why,
			 "memoryMaxBytes cannot be enforced: the command's cgroup "
			 "takes no memory.max (%s)",
			 strerror(errno));
		prepare_remove_cgroups(shim);
		answer_failed(shim, "bad_request", why);
		return false;
	}
	shim->started_at = clock_now_ms();
	shim->started_monotonic = clock_monotonic_ms();
	if (!run_start(shim, code, sizeof code, error, sizeof error)) {
		seed_unprotect(shim);
		if (shim->pid > 0)
			waitpid(shim->pid, NULL, 0);
		prepare_remove_cgroups(shim);
		answer_failed(shim, code, error);
		return false;
	}
	/* After the fork (or the seed's go), overlapping the command's exec:
	 * the log (a file made in the work dir), the masks' compilation. The
	 * output waits in the pipes meanwhile. */
	log_file_open(&shim->log, shim->spec.log_path, shim->spec.log_cap_bytes,
		      shim->spec.state_dir);
	output_init(shim);
	if (shim->spec.hold_output)
		shim->held_until = shim->started_monotonic + SHIM_HOLD_MS;
	/* From its exec: a start held by another command (shim-run.c) takes
	 * none of the command's own time. */
	if (shim->spec.timeout_ms > 0)
		shim->timeout_at = clock_monotonic_ms() + shim->spec.timeout_ms;
	struct shim_meta meta = {
		.id = shim->spec.id,
		.cmd = output_mask_text(shim->spec.cmd),
		.cwd = output_mask_text(shim->spec.cwd),
		.user = shim->spec.user,
		.log_path = shim->spec.log_path,
		.cgroup = shim->job.v2_dir,
		.pids_cgroup = shim->job.pids_dir,
		.background = shim->spec.background,
		.pty = shim->spec.pty_cols != 0,
		.stdin_stream = shim->spec.stdin_stream,
		.started_at = shim->started_at,
		.timeout_ms = shim->spec.timeout_ms,
		.pid = shim->pid,
		.shim_pid = getpid(),
	};
	/* Before the answer: a boxd restarted from here on finds the command. */
	bool written = write_meta(shim, &meta);
	int write_error = errno; /* before the cleanup below changes it */
	if (!written) {
		run_signal_tree(shim, SIGKILL);
		snprintf(error, sizeof error, "cannot write the state of the command in %s: %s",
			 shim->spec.state_dir, strerror(write_error));
		/* The command text is what fills it: a full disk is the caller's to see. */
		bool full = write_error == ENOSPC || write_error == EDQUOT;
		answer_failed(shim, full ? "disk_full" : "internal", error);
	} else {
		/* A spare is protected already; a shim made for this command
		 * in its final cgroup by now. */
		if (shim->spec.protected_dir && !shim->prep.is_protected)
			shim->prep.is_protected = protected_add(shim->spec.protected_dir, getpid());
		answer_ready(shim, &meta);
	}
	/* After the answer (nothing of the start waits on it) and before the
	 * loop answers the command's guard: its own shell is its to signal. */
	seed_unprotect(shim);
	free(meta.cmd);
	free(meta.cwd);
	return written;
}

/* A spare: preparation, then the spec. False when boxd went away first. */
static bool spare_wait(struct shim *shim)
{
	char error[512];
	size_t length;
	int seed_socket;
	char *message = fd_passing_receive_message(shim->channel, 1 << 20, &length, &seed_socket);
	if (!message)
		return false; /* boxd went away before it needed this spare */
	bool ok = message[0] == SHIM_MSG_PREPARE &&
		  shim_spec_parse(&shim->spec, message + 1, length - 1, false, error, sizeof error);
	free(message);
	shim->prep.seed_socket = seed_socket;
	if (!ok)
		return false;
	prepare(shim);
	if (!shim->prep.error)
		seed_start(shim); /* last: it needs everything else made */
	char tag = 0;
	int fd = fd_passing_receive(shim->channel, &tag);
	if (fd < 0) {
		prepare_discard(shim);
		return false;
	}
	/* boxd gives the seed the spec only for the id it was made for. */
	shim->seeded = tag == SHIM_MSG_SPEC_SEEDED && shim->prep.seed > 0;
	if (!shim->seeded) {
		seed_stop(shim);
		/* The seed may have sent the listener of its own guard before it
		 * died: the command forked instead sends another, which must not
		 * queue behind it. */
		if (!guard_channel_renew(shim->prep.guard)) {
			close(fd);
			prepare_discard(shim);
			answer_failed(shim, "internal", "cannot make the signal guard's channel");
			return false;
		}
	}
	struct shim_spec spec;
	ok = shim_spec_read(&spec, fd, error, sizeof error);
	close(fd);
	if (!ok) {
		prepare_discard(shim);
		answer_failed(shim, "internal", error);
		return false;
	}
	if (!prepare_take(shim, &spec) && shim->seeded) {
		/* The seed has a spec that was not made for its cgroups: never
		 * boxd's doing (exec-spawn.c), and the command must not run twice. */
		answer_failed(shim, "internal",
			      "the spec given to the seed does not match what was "
			      "prepared for it");
		return false;
	}
	return true;
}

/* Started by a boxd from before the channel (see the top). */
static bool legacy_wait(struct shim *shim)
{
	char error[512];
	struct stat input;
	bool spare = fstat(STDIN_FILENO, &input) == 0 && S_ISSOCK(input.st_mode);
	if (spare) {
		detach();
		int spec = fd_passing_receive(STDIN_FILENO, NULL);
		if (spec < 0)
			return false; /* boxd went away before it needed this spare */
		dup2(spec, STDIN_FILENO);
		close(spec);
	}
	if (!shim_spec_read(&shim->spec, STDIN_FILENO, error, sizeof error)) {
		status_line("error internal %s", error);
		return false;
	}
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	dup2(null, STDIN_FILENO);
	close(null);
	if (!spare)
		detach();
	prepare(shim);
	return true;
}

/* boxd names the shims' cgroup (BOXD_SHIM_CGROUP) and starts the maker, or
 * a spare as a program, in its own: the shim moves itself (exec-spawn.c
 * says why boxd does not start it there). The spares the maker forks are
 * born inside. A move that fails leaves the shim where boxd is, still
 * working. */
static void join_shims_cgroup(void)
{
	const char *dir = getenv("BOXD_SHIM_CGROUP");
	if (dir && *dir && !cgroup_move(dir, getpid()) && errno == ENOENT && mkdir(dir, 0755) == 0)
		cgroup_move(dir, getpid());
	unsetenv("BOXD_SHIM_CGROUP");
}

int main(int argc, char **argv)
{
	/* The maker returns here only in a spare it forked (shim-maker.c): the
	 * state below is made anew in each. */
	int made_channel = -1;
	void *made_filter = NULL;
	bool made = argc == 2 && !strcmp(argv[1], "--spares");
	if (argc == 2 && (made || !strcmp(argv[1], "--spare")))
		join_shims_cgroup();
	if (made && !maker_run(&made_channel, &made_filter))
		return 0;
	if (made) /* ps shows a spare as one, not as the maker */
		argv[1][strlen("--spare")] = '\0';
	struct shim *shim = &shim_state;
	*shim = (struct shim){.stdin_fd = -1,
			      .input_fd = -1,
			      .pty_fd = -1,
			      .listen_fd = -1,
			      .guard_fd = -1,
			      .channel = -1};
	shim->log.fd = -1;
	prepare_init(shim);
	shim->prep.guard_filter = made_filter; /* NULL: prepare() compiles it */
	for (int i = 0; i < SHIM_MAX_CLIENTS; i++)
		shim->clients[i].fd = -1;
	shim->out.fd = shim->err.fd = -1;
	shim->out.kind = SHIM_MSG_STDOUT;
	shim->err.kind = SHIM_MSG_STDERR;
	if (argc == 2 && !strcmp(argv[1], "--keep-cgroup"))
		return keep_cgroup();
	bool spare = made || (argc == 2 && !strcmp(argv[1], "--spare"));
	if (argc > 1 && !spare) {
		fprintf(stderr,
			"usage: boxd-shim --spare (started by boxd: the channel on stdin; see "
			"shim-protocol.h)\n"
			"       boxd-shim --spares (started by boxd: forks a --spare for each "
			"channel "
			"it is sent on stdin)\n"
			"       boxd-shim < SPEC (the same, as boxd did before the channel)\n"
			"       boxd-shim --keep-cgroup (boxd-commands.service)\n");
		return 2;
	}
	int signal_fd = setup_signals();
	if (made) {
		shim->channel = made_channel;
		lead_session(); /* the maker's child already, not boxd's */
	} else if (spare) {
		shim->channel = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		dup2(null, STDIN_FILENO);
		close(null);
		detach();
	}
	bool ready = spare ? spare_wait(shim) : legacy_wait(shim);
	if (ready && start(shim))
		loop(shim, signal_fd);
	log_file_close(&shim->log);
	prepare_remove_cgroups(shim);
	if (shim->prep.is_protected && shim->spec.protected_dir)
		protected_remove(shim->spec.protected_dir, getpid());
	return ready ? 0 : 1;
}
