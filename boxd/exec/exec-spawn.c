/* exec-spawn.c: starting boxd-shim processes, and keeping spares ready.
 *
 * A command's start is the part of an exec a caller waits for. What it would
 * cost if done then: boxd's fork and exec of the shim, the shim's own fork
 * to detach, its state dir, control socket, cgroups (and, on hybrid hosts,
 * the move into the v1 pids cgroup), pipes, seccomp filter and the fork of
 * the command. So boxd keeps SPARES shims started ahead, each asleep on its
 * channel with all of that made for an id reserved for it ("c_HEX";
 * shims/shim-prepare.c), the command's first process (the seed) included.
 * exec_spawn_claim() gives a request that id before it starts (the
 * X-Request-Id memory binds it first); exec_spawn() then hands that spare's
 * seed and shim the spec. One spare per command, never shared: a spare
 * leaves the pool when claimed.
 *
 * Spares are made again when nothing else is waiting on the loop (the
 * lowest priority, after the answer has gone out), or shortly after a take
 * while a long command runs. A spare that dies (killed, or its cgroup made
 * unusable) is noticed on its channel and replaced; a take that finds no
 * live spare starts a shim for that command alone, the same way. Each spare
 * costs two sleeping processes (the shim, about 0.9 MiB RSS and 0.1 MiB PSS,
 * and its seed), an empty state dir and an empty cgroup; all go when boxd
 * closes its channel or dies (a spare killed outright leaves them to the next
 * start's adoption, exec-adopt.c). Spares are forked by the maker (below),
 * not started as programs, while it lives. */
#include "exec-spawn.h"
#include "exec-thaw.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "fd-passing.h"
#include "helpers.h"
#include "log.h"
#include "protect.h"
#include "random-id.h"
#include "shim-protocol.h"
#include "shim-spec.h"
#include "text.h"
#include "xalloc.h"

#define SPARES 2
/* A take refills the pool this long after, if no answer did before. */
#define REFILL_AFTER_TAKE_MS 50
/* A spare that died this young is not replaced at once (a broken install
 * would otherwise start shims in a loop). */
#define SPARE_RETRY_MS 1000
/* The refill's priority: after everything else pending on the loop. */
#define REFILL_PRIORITY 2

extern char **environ;

static char *shim_program, *shim_cgroup;
static struct event_base *loop;
static exec_prepare_fn prepare_spec;
static struct event *refill;
static int64_t refill_due_ms;

static struct spare {
	int channel;        /* our end of its stdin socketpair; -1: an empty slot */
	int seed;           /* the socket to its seed (shim-protocol.h) */
	char hex[17];       /* it is prepared for "c_" and this */
	bool claimed;       /* a request holds its id */
	struct event *gone; /* the channel is readable only when the spare ends */
	int64_t born_ms;
} spares[SPARES];

/* The shims' cgroup, named to every shim boxd starts: a shim moves itself
 * there once it runs (shims/shim-maker.c), not boxd at its birth. A child
 * born into a cgroup (CLONE_INTO_CGROUP) would hang boxd in its vfork while
 * a command kept that cgroup frozen, and be killed at birth by kernels that
 * compare the kill counts of the parent's cgroup and the child's after a
 * cgroup.kill of boxd's own; the one move costs the maker's start only (its
 * spares are forked inside). */
#define SHIM_CGROUP_VARIABLE "BOXD_SHIM_CGROUP"

static char **shim_environment;

static void make_shim_environment(void)
{
	size_t count = 0;
	while (environ[count])
		count++;
	shim_environment = xcalloc(count + 2, sizeof *shim_environment);
	size_t kept = 0;
	for (size_t i = 0; i < count; i++)
		if (strncmp(environ[i], SHIM_CGROUP_VARIABLE "=", sizeof SHIM_CGROUP_VARIABLE))
			shim_environment[kept++] = environ[i];
	if (shim_cgroup)
		shim_environment[kept++] = xasprintf("%s=%s", SHIM_CGROUP_VARIABLE, shim_cgroup);
}

/* Starts boxd-shim `mode` with `input` as its stdin and `output` as its
 * stdout and stderr (posix_spawn: the child shares boxd's memory until its
 * exec, no copy of boxd's page tables). Returns its pid (for --spare that of
 * the first shim process, which detaches and exits), or -1 with errno set. */
static pid_t spawn_process(int input, int output, const char *mode)
{
	/* Made again if it was removed while empty: its freeze watch too. */
	if (shim_cgroup && mkdir(shim_cgroup, 0755) == 0)
		exec_thaw_rearm();
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, input, 0);
	posix_spawn_file_actions_adddup2(&actions, output, 1);
	posix_spawn_file_actions_adddup2(&actions, output, 2);
	posix_spawnattr_t attributes;
	helper_spawn_attributes(&attributes);
	char *argv[] = {"boxd-shim", (char *)mode, NULL};
	pid_t pid;
	int failed = posix_spawn(&pid, shim_program, &actions, &attributes, argv, shim_environment);
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attributes);
	errno = failed;
	return failed ? -1 : pid;
}

/* spawn_process with stdout and stderr on /dev/null. */
static pid_t spawn_quiet(int input, const char *mode)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	pid_t pid = null >= 0 ? spawn_process(input, null, mode) : -1;
	int failed = errno;
	if (null >= 0)
		close(null);
	errno = failed;
	return pid;
}

/* ---- the maker (shims/shim-maker.c) ----
 *
 * One boxd-shim --spares, started with the pool, forks every spare: a fork
 * of a small idle process instead of an exec of the shim and glibc's start
 * (0.4 ms of CPU per spare on a VM, its CPUID exits). Spares forked from it
 * share its stack canary and address layout, as children of one parent do;
 * it is made anew with the spares after a snapshot (exec_spawn_renew). If it
 * ends, spares are started as programs of their own until it is made again,
 * at the next spare's start after MAKER_RETRY_MS. */
#define MAKER_RETRY_MS 5000

static struct {
	int control; /* our end of its stdin; -1: none */
	pid_t pid;
	int64_t ended_ms;
} maker = {.control = -1};

/* Lets the maker go: it leaves at the end of its input (its exit, reaped
 * on the loop, is then no news). */
static void maker_let_go(void)
{
	if (maker.control >= 0)
		close(maker.control);
	maker.control = -1;
	maker.pid = 0;
}

/* The maker is gone or of no use: spares start as programs until it is
 * made again, MAKER_RETRY_MS from now. */
static void maker_lost(void)
{
	maker_let_go();
	maker.ended_ms = clock_monotonic_ms();
}

static void on_maker_exit(int status, void *arg)
{
	pid_t pid = (pid_t)(intptr_t)arg;
	unprotect_process(pid);
	if (pid != maker.pid)
		return; /* let go before */
	log_msg(LOG_LEVEL_WARNING,
		"the spare maker (boxd-shim --spares, pid %d) ended (status "
		"%d): spares start as programs of their own for now",
		(int)pid, status);
	maker_lost();
}

static void maker_start(void)
{
	if (maker.control >= 0 ||
	    (maker.ended_ms && clock_monotonic_ms() - maker.ended_ms < MAKER_RETRY_MS))
		return;
	int pair[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
		return;
	pid_t pid = spawn_quiet(pair[1], "--spares");
	int failed = errno;
	close(pair[1]);
	if (pid < 0) {
		log_msg(LOG_LEVEL_WARNING, "cannot start the spare maker %s: %s", shim_program,
			strerror(failed));
		close(pair[0]);
		maker_lost();
		return;
	}
	maker.control = pair[0];
	maker.pid = pid;
	protect_process_in(pid, shim_cgroup);
	helper_watch_exit(loop, pid, -1, on_maker_exit, (void *)(intptr_t)pid);
}

/* Has the maker fork a spare on `channel` (its end); false when there is no
 * maker to ask. */
static bool maker_make(int channel)
{
	maker_start();
	if (maker.control < 0)
		return false;
	if (fd_passing_send(maker.control, channel, 's', MSG_DONTWAIT))
		return true;
	log_msg(LOG_LEVEL_WARNING, "the spare maker (pid %d) takes no more: %s", (int)maker.pid,
		strerror(errno));
	maker_lost();
	return false;
}

/* Sends the preparation for `id`, with the seed's end of its socket. */
static bool send_prepare(int channel, const char *id, int seed)
{
	struct shim_spec spec;
	prepare_spec(&spec, id);
	size_t length;
	char *fields = shim_spec_format(&spec, &length);
	shim_spec_free(&spec);
	char *message = xmalloc(length + 1);
	message[0] = SHIM_MSG_PREPARE;
	memcpy(message + 1, fields, length);
	bool sent = fd_passing_send_message(channel, seed, message, length + 1, MSG_DONTWAIT);
	free(message);
	free(fields);
	return sent;
}

/* A shim on `channel` (its end): forked by the maker, else a program of
 * its own. False with errno set when neither could be. */
static bool start_shim(int channel)
{
	if (maker_make(channel))
		return true;
	pid_t pid = spawn_quiet(channel, "--spare");
	if (pid < 0)
		return false;
	/* The first process exits as soon as it has detached: reaped then. */
	helper_watch_exit(loop, pid, -1, NULL, NULL);
	return true;
}

/* A new shim told to prepare for `id`: its channel and the socket to its
 * seed (shim-protocol.h), or -1 with errno. */
static int spawn_shim(const char *id, int *seed)
{
	int channel[2], pair[2];
	*seed = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
		return -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0) {
		close(pair[0]);
		close(pair[1]);
		return -1;
	}
	bool started = start_shim(channel[1]);
	int failed = errno;
	close(channel[1]);
	if (!started) {
		close(channel[0]);
		close(pair[0]);
		close(pair[1]);
		errno = failed;
		return -1;
	}
	bool sent = send_prepare(channel[0], id, pair[1]);
	failed = errno;
	close(pair[1]);
	if (!sent) {
		close(pair[0]);
		close(channel[0]);
		errno = failed;
		return -1;
	}
	*seed = pair[0];
	return channel[0];
}

static void spare_clear(struct spare *spare)
{
	if (spare->gone)
		event_free(spare->gone);
	spare->gone = NULL;
	if (spare->seed >= 0)
		close(spare->seed);
	spare->seed = -1;
	spare->channel = -1;
	spare->claimed = false;
}

static void on_spare_gone(evutil_socket_t fd, short what, void *arg)
{
	struct spare *spare = arg;
	bool young = clock_monotonic_ms() - spare->born_ms < SPARE_RETRY_MS;
	log_msg(LOG_LEVEL_WARNING, "a spare shim (for c_%s) ended before it was needed%s",
		spare->hex, young ? ", right after its start" : "");
	close(spare->channel);
	spare_clear(spare);
	exec_spawn_refill(young ? SPARE_RETRY_MS : 0);
}

static bool spare_start(struct spare *spare)
{
	random_hex(spare->hex, 8);
	char id[24];
	snprintf(id, sizeof id, "c_%s", spare->hex);
	spare->channel = spawn_shim(id, &spare->seed);
	if (spare->channel < 0) {
		log_msg(LOG_LEVEL_WARNING, "cannot start a spare %s: %s", shim_program,
			strerror(errno));
		return false;
	}
	spare->claimed = false;
	spare->born_ms = clock_monotonic_ms();
	/* Nothing is said on it before the spec: readable means it ended. */
	spare->gone = event_new(loop, spare->channel, EV_READ, on_spare_gone, spare);
	event_add(spare->gone, NULL);
	return true;
}

/* One spare per run, so the loop gets a turn between two. */
static void on_refill(evutil_socket_t fd, short what, void *arg)
{
	for (int i = 0; i < SPARES; i++)
		if (spares[i].channel < 0) {
			if (!spare_start(&spares[i])) {
				exec_spawn_refill(SPARE_RETRY_MS);
				return;
			}
			break;
		}
	for (int i = 0; i < SPARES; i++)
		if (spares[i].channel < 0) {
			exec_spawn_refill(0);
			return;
		}
}

void exec_spawn_refill(int delay_ms)
{
	if (!refill)
		return;
	/* A refill due sooner stays due sooner. */
	int64_t due = clock_monotonic_ms() + delay_ms;
	if (event_pending(refill, EV_TIMEOUT, NULL) && refill_due_ms <= due)
		return;
	refill_due_ms = due;
	struct timeval delay = {delay_ms / 1000, (delay_ms % 1000) * 1000};
	event_add(refill, &delay);
}

void exec_spawn_init(struct event_base *base, const char *program, const char *cgroup,
		     exec_prepare_fn prepare)
{
	loop = base;
	prepare_spec = prepare;
	shim_program = xstrdup(program);
	shim_cgroup = cgroup ? xstrdup(cgroup) : NULL;
	make_shim_environment();
	for (int i = 0; i < SPARES; i++)
		spares[i] = (struct spare){.channel = -1, .seed = -1};
	refill = evtimer_new(loop, on_refill, NULL);
	event_priority_set(refill, REFILL_PRIORITY);
	/* All now, before boxd serves: an idle boxd is then woken by none of
	 * them (test_report_notify.py: idle means no wakeup at all). */
	for (int i = 0; i < SPARES; i++)
		spare_start(&spares[i]);
}

char *exec_spawn_claim(bool background)
{
	/* A claim is taken in the same turn of the loop (api-exec.c names the
	 * command, then starts it): one left from an earlier turn was never
	 * used, and its spare is free again. */
	struct spare *best = NULL;
	for (int i = 0; i < SPARES; i++) {
		struct spare *spare = &spares[i];
		spare->claimed = false;
		/* The oldest, the likeliest done preparing. */
		if (spare->channel >= 0 && (!best || spare->born_ms < best->born_ms))
			best = spare;
	}
	if (!best)
		return NULL;
	best->claimed = true;
	return xasprintf("%c_%s", background ? 'b' : 'c', best->hex);
}

/* True while the shim at the other end of `channel` lives: before the spec
 * goes to its seed, which must not run a command nobody supervises (the
 * seed also dies with its shim, shim-run.c). */
static bool alive(int channel)
{
	char byte;
	return recv(channel, &byte, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

/* Sends the spec to the seed, if it was made for `prepared` = `id`, then to
 * the shim, saying whether the seed has it; false when the shim is gone. */
static bool hand_over(int channel, int seed, const char *prepared, const char *id, int spec_fd,
		      bool seedable)
{
	/* The seed sits in the cgroups made for its id: only that very id goes
	 * to it, first, so it is on its way to exec while the shim wakes. A
	 * seed gone (or never made) leaves the start to the shim. */
	bool seeded = seedable && seed >= 0 && !strcmp(prepared, id) && alive(channel) &&
		      fd_passing_send(seed, spec_fd, SHIM_MSG_SPEC, MSG_DONTWAIT);
	return fd_passing_send(channel, spec_fd, seeded ? SHIM_MSG_SPEC_SEEDED : SHIM_MSG_SPEC,
			       MSG_DONTWAIT);
}

/* Hands the spec to a spare: the one claimed for `id`, else any free one
 * (it then makes what it needs for `id` itself). -1 when none is left. */
static int spare_take(const char *id, int spec_fd, bool seedable)
{
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < SPARES; i++) {
			struct spare *spare = &spares[i];
			if (spare->channel < 0 ||
			    (pass == 0 ? !spare->claimed || strcmp(id + 2, spare->hex) != 0
				       : spare->claimed))
				continue;
			char prepared[24];
			snprintf(prepared, sizeof prepared, "c_%s", spare->hex);
			int channel = spare->channel, seed = spare->seed;
			spare->seed = -1;
			spare_clear(spare);
			bool given = hand_over(channel, seed, prepared, id, spec_fd, seedable);
			if (seed >= 0)
				close(seed);
			if (given)
				return channel;
			close(channel); /* it died: the loop has not told us yet */
		}
	return -1;
}

int exec_spawn(const char *id, int spec_fd, bool seedable, char *error, size_t error_size)
{
	int channel = spare_take(id, spec_fd, seedable);
	exec_spawn_refill(REFILL_AFTER_TAKE_MS);
	if (channel >= 0)
		return channel;
	/* No spare left (a burst): one made for this command, the same way. */
	int seed;
	channel = spawn_shim(id, &seed);
	if (channel < 0) {
		text_fail(error, error_size, "cannot start %s: %s", shim_program, strerror(errno));
		return -1;
	}
	bool given = hand_over(channel, seed, id, id, spec_fd, seedable);
	close(seed);
	if (!given) {
		text_fail(error, error_size, "cannot pass the command to its shim: %s",
			  strerror(errno));
		close(channel);
		return -1;
	}
	return channel;
}

void exec_spawn_stop(void)
{
	if (refill) {
		event_free(refill);
		refill = NULL;
	}
	maker_let_go();
	/* Every spare sees the end of its channel, removes what it made and
	 * leaves; its end closes when it is gone, and then its cgroups are. */
	for (int i = 0; i < SPARES; i++)
		if (spares[i].channel >= 0)
			shutdown(spares[i].channel, SHUT_WR);
	int64_t deadline = clock_monotonic_ms() + 2000;
	for (int i = 0; i < SPARES; i++) {
		struct spare *spare = &spares[i];
		if (spare->channel < 0)
			continue;
		struct pollfd gone = {.fd = spare->channel, .events = POLLIN};
		char scratch[64];
		int64_t left;
		while ((left = deadline - clock_monotonic_ms()) > 0 &&
		       poll(&gone, 1, (int)left) == 1 &&
		       recv(spare->channel, scratch, sizeof scratch, MSG_DONTWAIT) > 0)
			;
		close(spare->channel);
		spare_clear(spare);
	}
}

void exec_spawn_renew(void)
{
	/* Each spare sees the end of its channel and removes what it made (its
	 * state dir, cgroups, seed) on its own; boxd need not wait for that.
	 * The new ones draw new ids: the old ids were drawn before a snapshot
	 * and would be handed out again by every box restored from it. The
	 * maker goes too: the spares it forks share its canary and layout. */
	maker_let_go();
	maker.ended_ms = 0;
	for (int i = 0; i < SPARES; i++) {
		struct spare *spare = &spares[i];
		if (spare->channel < 0)
			continue;
		shutdown(spare->channel, SHUT_WR);
		close(spare->channel);
		spare_clear(spare);
	}
	exec_spawn_refill(0);
}
