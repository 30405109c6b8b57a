/* shim-prepare.c: a command's start, made before the command is known.
 *
 * boxd keeps spare shims waiting (boxd/exec/exec-spawn.c), each told at its start
 * which id it will serve: the foreground id "c_HEX" boxd reserved for it.
 * While it waits, a spare makes everything a start needs that does not
 * depend on the command: its entry among the protected processes, the state
 * dir with its control socket bound and meta.tmp made empty (all in the run
 * dir, boxd's), the command's cgroups (v2 with pids.max and
 * memory.oom.group; on hybrid hosts the v1 pids one), the pipes and the
 * compiled seccomp filter; and last the seed, the command's first process
 * forked into those cgroups (joining the v1 one, which costs the cgroup
 * migration lock) where it waits for the spec (shim-run.c). All of it costs
 * file system and cgroup operations and a fork (each a few tens to hundreds
 * of microseconds on the development machines' ext4, more under load) that
 * a command's start then does not pay.
 *
 * The log file is the one thing made at the start, by the shim while the
 * seed execs: it lives in the work dir, the user's, where a file made for a
 * command that may never come has no place.
 *
 * A background command gets "b_HEX": the seed goes, the state dir and the
 * v1 cgroup are renamed, and the v2 cgroup (cgroup2 cannot rename)
 * is made anew; its command is forked as usual. A spec with any other id (no spare was left, boxd made this shim
 * for it) finds the things made for its own id, or made now. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protected.h"
#include "shim.h"
#include "shim-protocol.h"
#include "xalloc.h"

static void prepare_fail(struct shim *shim, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void prepare_fail(struct shim *shim, const char *code, const char *fmt, ...)
{
	if (shim->prep.error)
		return; /* the first failure is the one to tell */
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&shim->prep.error, fmt, ap) < 0)
		shim->prep.error = NULL;
	va_end(ap);
	snprintf(shim->prep.code, sizeof shim->prep.code, "%s", code);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static bool make_pipe(int fds[2], bool big)
{
	if (pipe2(fds, O_CLOEXEC) != 0)
		return false;
	/* A big pipe means fewer wakeups for a chatty command. */
	if (big)
		fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
	return true;
}

static void prepare_pipes(struct shim *shim)
{
	struct shim_prepared *p = &shim->prep;
	bool ok = make_pipe(p->out, true) && make_pipe(p->err, true) && make_pipe(p->in, true) &&
		  make_pipe(p->report, false) &&
		  socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p->guard) == 0 &&
		  (p->null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;
	if (!ok)
		prepare_fail(shim, "internal", "cannot set up the command's pipes: %s",
			     strerror(errno));
}

static void prepare_state_dir(struct shim *shim)
{
	struct shim_prepared *p = &shim->prep;
	const char *dir = shim->spec.state_dir;
	p->state_dir = xstrdup(dir);
	if (mkdir(dir, 0700) == 0)
		p->made_state_dir = true;
	else if (errno != EEXIST) { /* an old boxd makes it before it starts the shim */
		bool full = errno == ENOSPC || errno == EDQUOT;
		prepare_fail(shim, full ? "disk_full" : "internal",
			     "cannot create the command's state dir %s: %s", dir, strerror(errno));
		return;
	}
	p->state_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->state_fd >= 0) {
		/* Made empty now, filled and renamed into place at the start
		 * (fields_write_into). The exit record needs no such thing: a
		 * foreground command's goes to boxd first (boxd-shim.c). */
		p->meta_fd = openat(p->state_fd, SHIM_STATE_TEMPORARY(SHIM_STATE_META),
				    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	}
	char error[512];
	if (!socket_listen(shim, error, sizeof error))
		prepare_fail(shim, "internal", "%s", error);
}

static void prepare_cgroups(struct shim *shim)
{
	struct shim_prepared *p = &shim->prep;
	const struct shim_spec *spec = &shim->spec;
	cgroup_job_create(&shim->job, spec->cgroup_base, spec->pids_base, spec->id, spec->pids_max,
			  0);
	if (shim->job.v2_dir)
		p->cgroup_fd = open(shim->job.v2_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

void prepare(struct shim *shim)
{
	struct shim_prepared *p = &shim->prep;
	const struct shim_spec *spec = &shim->spec;
	p->id = xstrdup(spec->id);
	/* A spare is a shim too: no command may signal it. */
	if (spec->protected_dir && !p->is_protected)
		p->is_protected = protected_add(spec->protected_dir, getpid());
	prepare_state_dir(shim);
	prepare_cgroups(shim);
	prepare_pipes(shim);
	if (!p->guard_filter)
		p->guard_filter = guard_prepare();
}

/* Two settings alike: both absent (no cgroups here), or the same text. */
static bool same(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

/* "b_HEX" for what was made for "c_HEX": renames, and the v2 cgroup anew. */
static bool rename_for(struct shim *shim, const struct shim_spec *spec)
{
	struct shim_prepared *p = &shim->prep;
	if (p->error || strlen(p->id) < 3 || strcmp(p->id + 1, spec->id + 1) != 0 ||
	    !same(shim->spec.cgroup_base, spec->cgroup_base) ||
	    !same(shim->spec.pids_base, spec->pids_base))
		return false;
	if (rename(p->state_dir, spec->state_dir) != 0)
		return false;
	free(p->state_dir);
	p->state_dir = xstrdup(spec->state_dir);
	char *v2_before = shim->job.v2_dir ? xstrdup(shim->job.v2_dir) : NULL;
	bool renamed =
		cgroup_job_rename(&shim->job, spec->cgroup_base, spec->id, shim->spec.pids_max);
	if (renamed && v2_before && !same(v2_before, shim->job.v2_dir)) {
		close_fd(&p->cgroup_fd);
		p->cgroup_fd = open(shim->job.v2_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	free(v2_before);
	return renamed;
}

bool prepare_take(struct shim *shim, struct shim_spec *spec)
{
	struct shim_prepared *p = &shim->prep;
	bool ready = same(p->id, spec->id) && same(p->state_dir, spec->state_dir) &&
		     same(shim->spec.cgroup_base, spec->cgroup_base) &&
		     same(shim->spec.pids_base, spec->pids_base);
	if (!ready && !rename_for(shim, spec)) {
		/* Made for another command (or half renamed): away with it. */
		prepare_discard(shim);
		shim_spec_free(&shim->spec);
		shim->spec = *spec;
		prepare(shim);
		return false;
	}
	shim_spec_free(&shim->spec);
	shim->spec = *spec;
	return ready;
}

bool prepare_cgroup_again(struct shim *shim)
{
	const struct shim_spec *spec = &shim->spec;
	if (!spec->cgroup_base)
		return false;
	close_fd(&shim->prep.cgroup_fd);
	struct cgroup_job fresh;
	if (!cgroup_job_create(&fresh, spec->cgroup_base, NULL, spec->id, shim->spec.pids_max,
			       spec->memory_max) ||
	    !fresh.v2_dir) {
		cgroup_job_free(&fresh);
		return false;
	}
	free(shim->job.v2_dir);
	shim->job.v2_dir = fresh.v2_dir;
	shim->prep.cgroup_fd = open(shim->job.v2_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return shim->prep.cgroup_fd >= 0;
}

void prepare_done(struct shim *shim)
{
	struct shim_prepared *p = &shim->prep;
	int *fds[] = {&p->out[1],   &p->err[1],   &p->in[0],   &p->report[0], &p->report[1],
		      &p->guard[0], &p->guard[1], &p->null_fd, &p->cgroup_fd, &p->seed_socket};
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
		close_fd(fds[i]);
}

void prepare_remove_cgroups(struct shim *shim)
{
	const char *dir = shim->job.v2_dir;
	/* Empty, it goes at once. Busy, the command made cgroups below it, or
	 * moved a process in: a protected one goes home (it would otherwise
	 * stay in a cgroup nobody removes, and keep it), then the empty ones
	 * below go. */
	if (dir && rmdir(dir) != 0 && errno == EBUSY) {
		if (shim->spec.protected_dir)
			protected_rescue(shim->spec.protected_dir, dir);
		cgroup_remove_below(dir);
	}
	cgroup_job_remove(&shim->job);
}

void prepare_discard(struct shim *shim)
{
	struct shim_prepared *p = &shim->prep;
	seed_stop(shim); /* out of the cgroups before they go */
	prepare_done(shim);
	int *fds[] = {&p->out[0], &p->err[0], &p->in[1], &p->meta_fd};
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
		close_fd(fds[i]);
	close_fd(&shim->listen_fd);
	if (p->state_fd >= 0) {
		const char *names[] = {SHIM_STATE_TEMPORARY(SHIM_STATE_META), SHIM_STATE_SOCKET};
		for (size_t i = 0; i < 2; i++)
			unlinkat(p->state_fd, names[i], 0);
		close_fd(&p->state_fd);
		if (p->made_state_dir)
			rmdir(p->state_dir);
	}
	prepare_remove_cgroups(shim);
	cgroup_job_free(&shim->job);
	free(p->id);
	free(p->state_dir);
	free(p->error);
	/* The process's protection and the compiled filter stay. */
	bool is_protected = p->is_protected;
	void *filter = p->guard_filter;
	prepare_init(shim);
	p->is_protected = is_protected;
	p->guard_filter = filter;
}

void prepare_init(struct shim *shim)
{
	shim->prep = (struct shim_prepared){.state_fd = -1,
					    .meta_fd = -1,
					    .cgroup_fd = -1,
					    .seed_socket = -1,
					    .out = {-1, -1},
					    .err = {-1, -1},
					    .in = {-1, -1},
					    .report = {-1, -1},
					    .guard = {-1, -1},
					    .null_fd = -1};
}
