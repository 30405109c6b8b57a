/* exec-start.c: a command's start: its request (who it runs as, where),
 * its id, the spec its shim gets (environment, limits, what to mask), and
 * the shim's one answer. */
#include "exec-internal.h"
#include "exec-spawn.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "config.h"
#include "init.h"
#include "log.h"
#include "protect.h"
#include "random-id.h"
#include "redact.h"
#include "credentials.h"
#include "secrets.h"
#include "shim-protocol.h"
#include "shim-spec.h"
#include "steps.h"
#include "text.h"
#include "users.h"
#include "xalloc.h"

/* Enough for make -j and node; a fork bomb stops here instead of the box. */
#define EXEC_PIDS_MAX 1024

struct exec_start {
	struct exec_request *request;
	char *id;
	int channel; /* the shim's, until it answers */
	struct event *answer_event;
	exec_started_fn started;
	void *arg;
};

static char *random_id(char prefix)
{
	char hex[17];
	random_hex(hex, 8);
	return xasprintf("%c_%s", prefix, hex);
}

void exec_request_free(struct exec_request *r)
{
	if (!r)
		return;
	free(r->cmd);
	free(r->cwd);
	free(r->user);
	free(r->groups);
	free(r->home);
	for (size_t i = 0; i < r->env_count; i++)
		free(r->env[i]);
	free(r->env);
	free(r->stdin_data);
	free(r->note);
	free(r->id);
	free(r);
}

bool exec_request_user(struct exec_request *r, const char *given, char *error, size_t size)
{
	const struct boxd_config *config = exec_settings();
	if (!given)
		given = init_user() ? init_user() : config->user ? config->user : "root";
	const struct user_entry *entry = users_find(given);
	if (!entry)
		return text_fail(error, size,
				 "unknown user %s: give a name from /etc/passwd or a uid", given);
	r->user = xstrdup(entry->name);
	r->uid = entry->uid;
	r->gid = entry->gid;
	r->home = xstrdup(entry->home);
	r->group_count = entry->group_count;
	r->groups = xmalloc((r->group_count ? r->group_count : 1) * sizeof *r->groups);
	if (entry->group_count)
		memcpy(r->groups, entry->groups, entry->group_count * sizeof *r->groups);
	return true;
}

bool exec_request_cwd(struct exec_request *r, const char *given, enum failure *failure, char *error,
		      size_t size)
{
	/* The init's working dir, when the control plane set one. */
	const char *work = init_work_dir() ? init_work_dir() : exec_settings()->work_dir;
	r->cwd = !given            ? xstrdup(work)
		 : given[0] == '/' ? xstrdup(given)
				   : xasprintf("%s/%s", work, given);
	struct stat info;
	*failure = FAILURE_BAD_REQUEST;
	if (stat(r->cwd, &info) != 0) {
		*failure = FAILURE_CWD_NOT_FOUND;
		return text_fail(error, size,
				 "cwd %s does not exist: create it first or pick another "
				 "directory",
				 r->cwd);
	}
	if (!S_ISDIR(info.st_mode))
		return text_fail(error, size, "cwd %s is not a directory", r->cwd);
	return true;
}

char *exec_new_id(bool background)
{
	/* A spare's id: its state dir, log and cgroups are made already. */
	char *id = exec_spawn_claim(background);
	return id ? id : random_id(background ? 'b' : 'c');
}

static void push_env(char ***env, size_t *count, char *entry)
{
	*env = xrealloc(*env, (*count + 1) * sizeof **env);
	(*env)[(*count)++] = entry;
}

static void add_secret_env(const char *name, const char *value, void *context)
{
	struct shim_spec *spec = context;
	push_env(&spec->env, &spec->env_count, xasprintf("%s=%s", name, value));
}

static void add_masked_value(const char *value, void *context)
{
	struct shim_spec *spec = context;
	push_env(&spec->secrets, &spec->secret_count, xstrdup(value));
}

/* Base environment, then the secrets, then the request's own entries. */
static void add_init_env(const char *entry, void *arg)
{
	struct shim_spec *spec = arg;
	push_env(&spec->env, &spec->env_count, xstrdup(entry));
}

static void build_env(const struct exec_request *r, struct shim_spec *spec)
{
	const struct boxd_config *config = exec_settings();
	push_env(&spec->env, &spec->env_count,
		 xstrdup("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
	push_env(&spec->env, &spec->env_count, xasprintf("HOME=%s", r->home ? r->home : "/"));
	push_env(&spec->env, &spec->env_count, xasprintf("USER=%s", r->user));
	push_env(&spec->env, &spec->env_count, xasprintf("LOGNAME=%s", r->user));
	push_env(&spec->env, &spec->env_count, xstrdup("SHELL=/bin/bash"));
	push_env(&spec->env, &spec->env_count, xstrdup("LANG=C.UTF-8"));
	if (r->pty_cols) /* the contract's; a request's own TERM still wins */
		push_env(&spec->env, &spec->env_count, xstrdup("TERM=xterm-256color"));
	if (config->display)
		push_env(&spec->env, &spec->env_count, xasprintf("DISPLAY=%s", config->display));
	init_env_foreach(add_init_env, spec);
	secrets_foreach(add_secret_env, spec);
	credentials_env_foreach(add_init_env, spec);
	/* boxctl and the credential helpers in a command reach the boxd that
	 * ran it (several may run side by side). */
	push_env(&spec->env, &spec->env_count, xasprintf("BOXD_SOCKET=%s", config->socket_path));
	for (size_t i = 0; i < r->env_count; i++)
		push_env(&spec->env, &spec->env_count, xstrdup(r->env[i]));
}

void exec_prepare_spec(struct shim_spec *spec, const char *id)
{
	const struct boxd_config *config = exec_settings();
	const struct exec_cgroups *cgroups = exec_cgroups();
	*spec = (struct shim_spec){
		.id = xstrdup(id),
		.state_dir = exec_state_path(id, NULL),
		.log_path = xasprintf("%s/.sbx/logs/%s.log", config->work_dir, id),
		.log_cap_bytes = config->log_cap_bytes,
		.pids_max = EXEC_PIDS_MAX,
		.cgroup_base = cgroups->base ? xstrdup(cgroups->base) : NULL,
		.shim_cgroup = cgroups->shims ? xstrdup(cgroups->shims) : NULL,
		.pids_base = cgroups->pids ? xstrdup(cgroups->pids) : NULL,
		.protected_dir = xstrdup(protect_dir()),
	};
}

static void fill_spec(struct shim_spec *spec, const struct exec_request *r, const char *id)
{
	exec_prepare_spec(spec, id);
	spec->cmd = xstrdup(r->cmd);
	spec->cwd = xstrdup(r->cwd);
	spec->user = xstrdup(r->user);
	spec->uid = r->uid;
	spec->gid = r->gid;
	spec->timeout_ms = r->timeout_ms;
	spec->max_output_bytes = r->background ? 0 : r->max_output_bytes;
	spec->background = r->background;
	spec->hold_output = r->streaming;
	spec->memory_max = r->memory_max_bytes;
	if (r->group_count) {
		spec->groups = xmalloc(r->group_count * sizeof *spec->groups);
		memcpy(spec->groups, r->groups, r->group_count * sizeof *spec->groups);
		spec->group_count = r->group_count;
	}
	spec->stdin_stream = r->stdin_stream;
	spec->pty_cols = r->pty_cols;
	spec->pty_rows = r->pty_rows;
	if (r->stdin_data) {
		spec->stdin_data = xmalloc(r->stdin_length + 1);
		memcpy(spec->stdin_data, r->stdin_data, r->stdin_length);
		spec->stdin_length = r->stdin_length;
	}
	build_env(r, spec);
	/* The shim masks its output itself: it gets every masked value. */
	secrets_foreach_masked(add_masked_value, spec);
	/* No core dumps of commands in the work dir; descriptors for servers. */
	spec->rlimits = xcalloc(1, sizeof *spec->rlimits);
	spec->rlimits[spec->rlimit_count++] = (struct shim_rlimit){RLIMIT_CORE, 0, 0};
}

static void start_finish(struct exec_start *start, struct exec_job *job, const char *code,
			 const char *error)
{
	if (start->answer_event)
		event_free(start->answer_event);
	if (start->channel >= 0)
		close(start->channel);
	if (!job)
		exec_remove_prepared(start->id);
	start->started(start->arg, job, code, error);
	/* A background command's answer (or an error) is out: the loop may
	 * make a spare. A foreground one's comes at its end (exec_job_finish). */
	if (!job || job->meta.background)
		exec_spawn_refill(0);
	exec_request_free(start->request);
	free(start->id);
	free(start);
}

/* A command too long for the ready message (64 KiB) comes without its
 * text: the meta file the shim wrote before answering has it, masked. */
static void complete_meta(struct exec_job *job, const char *request_cmd)
{
	if (job->meta.cmd)
		return;
	char *path = exec_state_path(job->id, SHIM_STATE_META);
	struct shim_meta written;
	if (shim_meta_read(&written, path) && written.cmd) {
		job->meta.cmd = written.cmd;
		written.cmd = NULL;
	} else {
		job->meta.cmd = redact_text(request_cmd); /* as the shim masks it */
	}
	shim_meta_free(&written);
	free(path);
}

/* The shim started the command: SHIM_MSG_READY carried its meta. */
static void start_ready(struct exec_start *start, const char *meta, size_t length)
{
	struct exec_job *job = exec_job_add(start->id);
	bool ok = shim_meta_parse(&job->meta, meta, length) && !strcmp(job->meta.id, start->id);
	if (ok)
		complete_meta(job, start->request->cmd);
	job->note = start->request->note ? xstrdup(start->request->note) : NULL;
	/* The channel is boxd's connection to the shim from now on. */
	event_free(start->answer_event);
	start->answer_event = NULL;
	int channel = start->channel;
	start->channel = -1;
	if (!ok) {
		/* Not a shim this boxd understands: end it as a lost one. */
		shim_meta_free(&job->meta);
		job->meta.id = xstrdup(start->id);
		close(channel);
		exec_job_lost(job);
		start_finish(start, job, NULL, NULL);
		return;
	}
	exec_disk_keep_start(job);
	if (job->meta.background) {
		/* Before its end can be recorded: a quick command is already over. */
		char *what = exec_summary(job->meta.cmd);
		steps_add("bg", "started %s (in %s) as %s", what, job->meta.cwd, job->id);
		free(what);
	}
	exec_job_monitor(job, channel); /* an exit notice behind the answer comes next */
	start_finish(start, job, NULL, NULL);
}

/* The shim's one answer: SHIM_MSG_READY, or SHIM_MSG_FAILED "CODE SENTENCE". */
static void on_answer(evutil_socket_t fd, short what, void *arg)
{
	struct exec_start *start = arg;
	static char message[SHIM_MESSAGE_MAX + 1];
	ssize_t n = recv(fd, message, SHIM_MESSAGE_MAX, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0 && message[0] == SHIM_MSG_READY) {
		start_ready(start, message + 1, (size_t)n - 1);
		return;
	}
	char code[64] = "internal";
	const char *text = "the command's supervisor (boxd-shim) exited without answering";
	if (n > 0 && message[0] == SHIM_MSG_FAILED) {
		message[n] = '\0';
		int length = 0;
		if (sscanf(message + 1, "%63s%n", code, &length) == 1 && message[1 + length] == ' ')
			text = message + 1 + length + 1;
	}
	start_finish(start, NULL, code, text);
}

static int spec_memfd(const struct shim_spec *spec)
{
	int fd = memfd_create("boxd-spec", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (!shim_spec_write(spec, fd) || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool spawn_shim(struct exec_start *start, const struct shim_spec *spec, char *error,
		       size_t error_size)
{
	int spec_fd = spec_memfd(spec);
	if (spec_fd < 0)
		return text_fail(error, error_size, "cannot pass the command to its shim: %s",
				 strerror(errno));
	start->channel = exec_spawn(start->id, spec_fd, spec->pty_cols == 0, error, error_size);
	close(spec_fd);
	if (start->channel < 0)
		return false;
	start->answer_event =
		event_new(exec_loop(), start->channel, EV_READ | EV_PERSIST, on_answer, start);
	event_add(start->answer_event, NULL);
	return true;
}

void exec_start(struct exec_request *request, exec_started_fn started, void *arg)
{
	exec_kept_sweep();
	struct exec_start *start = xcalloc(1, sizeof *start);
	start->request = request;
	start->started = started;
	start->arg = arg;
	start->channel = -1;
	start->id = request->id ? xstrdup(request->id) : exec_new_id(request->background);
	/* The state dir is the shim's to make (a spare made it ahead). */
	char error[512] = "";
	struct shim_spec spec;
	fill_spec(&spec, request, start->id);
	bool ok = spawn_shim(start, &spec, error, sizeof error);
	shim_spec_free(&spec);
	if (!ok) {
		log_msg(LOG_LEVEL_ERROR, "%s", error);
		start_finish(start, NULL, "internal", error);
	}
}
