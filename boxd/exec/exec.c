/* exec.c: the commands boxd knows, followed from the event loop through
 * their shims (their start is exec-start.c's, which are kept once ended
 * exec-kept.c's); and exec's start and end with boxd's. */
#include "exec-internal.h"
#include "exec-spawn.h"
#include "exec-thaw.h"
#include "helpers.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <unistd.h>

#include "activity.h"
#include "cgroup.h"
#include "config.h"
#include "clock.h"
#include "log.h"
#include "health.h"
#include "init.h"
#include "protect.h"
#include "protected.h"
#include "redact.h"
#include "report.h"
#include "shim-protocol.h"
#include "secrets.h"
#include "steps.h"
#include "xalloc.h"

static struct exec_job *jobs, *jobs_tail;

static char *cgroup_base, *shim_cgroup, *pids_base;
static struct exec_cgroups cgroups;
static char *shim_program;
/* Given at exec_init. */
static struct event_base *loop;
static const struct boxd_config *settings;

/* ---- the job list ---- */

struct exec_job *exec_job_add(const char *id)
{
	struct exec_job *job = xcalloc(1, sizeof *job);
	job->id = xstrdup(id);
	job->monitor_fd = -1;
	job->state = EXEC_RUNNING;
	job->prev = jobs_tail;
	if (jobs_tail)
		jobs_tail->next = job;
	else
		jobs = job;
	jobs_tail = job;
	return job;
}

struct exec_job *exec_find(const char *id)
{
	for (struct exec_job *job = jobs; job; job = job->next)
		if (!strcmp(job->id, id))
			return job;
	return NULL;
}

struct exec_job *exec_first(void)
{
	return jobs;
}

bool exec_memory_caps(void)
{
	return cgroup_has_memory(cgroup_base);
}

int exec_running_background(void)
{
	int count = 0;
	for (struct exec_job *job = jobs; job; job = job->next)
		count += job->state == EXEC_RUNNING && job->meta.background;
	return count;
}

char *exec_state_path(const char *id, const char *name)
{
	const char *run = settings->run_dir;
	return name ? xasprintf("%s/procs/%s/%s", run, id, name)
		    : xasprintf("%s/procs/%s", run, id);
}

struct event_base *exec_loop(void)
{
	return loop;
}

const struct boxd_config *exec_settings(void)
{
	return settings;
}

const struct exec_cgroups *exec_cgroups(void)
{
	cgroups = (struct exec_cgroups){cgroup_base, shim_cgroup, pids_base};
	return &cgroups;
}

void exec_remove_state_dir(const char *id)
{
	/* Every file a shim writes there, and the NAME.tmp each is written
	 * under first (fields_write_file renames it into place). */
	static const char *const names[] = {
		SHIM_STATE_META,
		SHIM_STATE_EXIT,
		SHIM_STATE_STDOUT,
		SHIM_STATE_STDERR,
		SHIM_STATE_SOCKET,
		SHIM_STATE_LOG_BASE,
		SHIM_STATE_TEMPORARY(SHIM_STATE_META),
		SHIM_STATE_TEMPORARY(SHIM_STATE_EXIT),
		SHIM_STATE_TEMPORARY(SHIM_STATE_STDOUT),
		SHIM_STATE_TEMPORARY(SHIM_STATE_STDERR),
		SHIM_STATE_TEMPORARY(SHIM_STATE_LOG_BASE),
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char *path = exec_state_path(id, names[i]);
		unlink(path);
		free(path);
	}
	char *dir = exec_state_path(id, NULL);
	rmdir(dir);
	free(dir);
}

void exec_remove_prepared(const char *id)
{
	exec_remove_state_dir(id);
	char *dirs[] = {cgroup_base ? xasprintf("%s/%s", cgroup_base, id) : NULL,
			pids_base ? xasprintf("%s/%s", pids_base, id) : NULL};
	for (int i = 0; i < 2; i++) {
		if (dirs[i])
			rmdir(dirs[i]); /* not while anything runs in it */
		free(dirs[i]);
	}
	/* Its log, made ahead and never written. */
	char *log = xasprintf("%s/.sbx/logs/%s.log", settings->work_dir, id);
	struct stat info;
	if (lstat(log, &info) == 0 && S_ISREG(info.st_mode) && info.st_size == 0)
		unlink(log);
	free(log);
}

static void job_free(struct exec_job *job)
{
	if (job->monitor_event)
		event_free(job->monitor_event);
	if (job->monitor_fd >= 0)
		close(job->monitor_fd);
	shim_meta_free(&job->meta);
	exit_record_free(&job->exit);
	free(job->note);
	free(job->id);
	free(job);
}

static void jobs_unlink(struct exec_job *job)
{
	if (job->prev)
		job->prev->next = job->next;
	else
		jobs = job->next;
	if (job->next)
		job->next->prev = job->prev;
	else
		jobs_tail = job->prev;
}

void exec_forget(struct exec_job *job)
{
	jobs_unlink(job);
	if (job->state == EXEC_ENDED)
		exec_kept_remove(job);
	exec_remove_state_dir(job->id);
	exec_disk_forget(job->id);
	struct cgroup_job tree = {.v2_dir = job->meta.cgroup, .pids_dir = job->meta.pids_cgroup};
	cgroup_job_remove(&tree);
	job_free(job);
}

/* ---- holding and watching ---- */

void exec_hold(struct exec_job *job)
{
	job->busy++;
}

void exec_release(struct exec_job *job)
{
	job->busy--;
}

bool exec_held(const struct exec_job *job)
{
	return job->busy > 0;
}

void exec_watch(struct exec_job *job, struct exec_watch *watch)
{
	if (job->state == EXEC_ENDED) {
		watch->ended(watch->arg, job);
		return;
	}
	watch->next = job->watches;
	job->watches = watch;
}

void exec_unwatch(struct exec_job *job, struct exec_watch *watch)
{
	for (struct exec_watch **link = &job->watches; *link; link = &(*link)->next)
		if (*link == watch) {
			*link = watch->next;
			return;
		}
}

char *exec_summary(const char *command)
{
	char *cmd = redact_text(command ? command : "");
	/* One line: the first line of the command, shortened. */
	size_t length = strcspn(cmd, "\n");
	if (length > 80)
		length = 80;
	char *line = xasprintf("%.*s%s", (int)length, cmd, cmd[length] ? " ..." : "");
	free(cmd);
	return line;
}

/* An ended foreground command is never shown with its text (steps name it
 * once, at its end): it leaves memory; its meta file keeps it. */
static void drop_text(struct exec_job *job)
{
	if (job->meta.background)
		return;
	free(job->meta.cmd);
	job->meta.cmd = NULL;
	free(job->note);
	job->note = NULL;
}

void exec_job_finish(struct exec_job *job)
{
	exec_disk_keep_end(job);
	job->state = EXEC_ENDED;
	job->ended_monotonic = clock_monotonic_ms();
	exec_kept_add(job);
	if (job->adopted) {
		exit_record_drop_captures(&job->exit); /* the file has them */
		drop_text(job);
		return; /* found ended at start: no step, no report, no watcher yet */
	}
	char *what = exec_summary(job->meta.cmd);
	const char *sig = signal_name(job->exit.signal);
	steps_add(job->meta.background ? "bg" : "exec", "%s (in %s): %s %d%s%s%s after %.1f s%s",
		  what, job->meta.cwd ? job->meta.cwd : "?",
		  job->exit.timed_out ? "timed out, exit" : "exit", job->exit.exit_code,
		  sig ? " " : "", sig ? sig : "", job->exit.oom_kills > 0 ? " (out of memory)" : "",
		  (double)job->exit.duration_ms / 1000.0,
		  job->exit.log_error ? " (log incomplete)" : "");
	free(what);
	drop_text(job);
	struct exec_watch *watch = job->watches;
	job->watches = NULL;
	job->busy++;
	while (watch) {
		struct exec_watch *next = watch->next;
		watch->ended(watch->arg, job);
		watch = next;
	}
	job->busy--;
	if (job->meta.background)
		report_now();
	else
		exec_spawn_refill(0); /* its answer is out: the loop may make a spare */
	if (job->monitor_fd < 0)
		exit_record_drop_captures(&job->exit);
}

void exec_job_ended(struct exec_job *job)
{
	exec_job_exit_notice(job, NULL, 0);
}

void exec_job_exit_notice(struct exec_job *job, const char *record, size_t length)
{
	if (job->state == EXEC_ENDED)
		return;
	/* The record in the shim's exit notice (a foreground command's with
	 * its captures, before the file is written), or the file (the notice
	 * of a shim from before the channel is empty but when the file could
	 * not be written). */
	bool known = length && exit_record_parse(&job->exit, record, length);
	if (!known) {
		char *path = exec_state_path(job->id, SHIM_STATE_EXIT);
		known = exit_record_read(&job->exit, path);
		free(path);
	}
	if (known)
		exec_job_finish(job);
	else
		exec_job_lost(job);
}

/* The shim is gone without an exit record: someone killed it. Its command
 * loses its supervisor, so its tree is stopped, and the end is recorded. */
void exec_job_lost(struct exec_job *job)
{
	if (job->state == EXEC_ENDED)
		return;
	struct cgroup_job tree = {.v2_dir = job->meta.cgroup, .pids_dir = job->meta.pids_cgroup};
	/* boxd itself may have been moved there by the command. */
	if (tree.v2_dir && protect_dir())
		protected_rescue(protect_dir(), tree.v2_dir);
	if (cgroup_job_signal(&tree, SIGKILL) < 0 && job->meta.pid > 0)
		kill(-job->meta.pid, SIGKILL);
	/* A shim that could not write its record on a full run dir looks the
	 * same from here; the free space tells the two apart for the reader. */
	struct statvfs space;
	bool run_dir_full = statvfs(settings->run_dir, &space) == 0 && space.f_bavail == 0;
	exit_record_free(&job->exit);
	job->exit = (struct exit_record){
		.exit_code = 128 + SIGKILL,
		.signal = SIGKILL,
		.cpu_ms = cgroup_job_cpu_ms(&tree),
		.peak_memory_bytes = cgroup_job_peak_memory(&tree),
		.oom_kills = cgroup_job_oom_kills(&tree),
		.ended_at = clock_now_ms(),
		.duration_ms = clock_now_ms() - job->meta.started_at,
		.message = xstrdup(
			run_dir_full ? "the command's exit could not be recorded: the run dir is "
				       "full; its processes "
				       "were stopped and its output may be incomplete"
				     : "the shim supervising this command died (killed from "
				       "outside boxd); its "
				       "processes were stopped and its output may be incomplete"),
	};
	/* Best effort: the end is kept in memory whether or not this lands. */
	char *path = exec_state_path(job->id, SHIM_STATE_EXIT);
	exit_record_write(&job->exit, path);
	free(path);
	log_msg(LOG_LEVEL_WARNING, "the shim of %s ended without recording an exit%s", job->id,
		run_dir_full ? " (the run dir is full)" : "");
	exec_job_finish(job);
}

/* ---- the monitor connection ---- */

int exec_connect(struct exec_job *job)
{
	struct sockaddr_un address = {.sun_family = AF_UNIX};
	char *path = exec_state_path(job->id, SHIM_STATE_SOCKET);
	int dir = -1;
	if (snprintf(address.sun_path, sizeof address.sun_path, "%s", path) >=
	    (int)sizeof address.sun_path) {
		/* Too long for sun_path (deep test dirs): go through a descriptor. */
		char *state = exec_state_path(job->id, NULL);
		dir = open(state, O_PATH | O_DIRECTORY | O_CLOEXEC);
		free(state);
		snprintf(address.sun_path, sizeof address.sun_path, "/proc/self/fd/%d/sock", dir);
	}
	free(path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
		close(fd);
		fd = -1;
	}
	if (dir >= 0)
		close(dir);
	return fd;
}

/* A foreground command's record came in the exit notice, its file after:
 * once the shim is gone the file is there, unless the shim was killed in
 * between, when boxd writes what it was told (so a restart of boxd finds the
 * same end). The captures then live in the file only. */
static void settle_record(struct exec_job *job)
{
	if (job->state != EXEC_ENDED || !job->exit.has_captures || !job->exit.captures[0])
		return;
	char *path = exec_state_path(job->id, SHIM_STATE_EXIT);
	if (access(path, F_OK) != 0 && errno == ENOENT && !exit_record_write(&job->exit, path))
		log_msg(LOG_LEVEL_WARNING, "cannot write the exit record of %s: %s", job->id,
			strerror(errno));
	free(path);
	exit_record_drop_captures(&job->exit);
}

static void on_monitor(evutil_socket_t fd, short what, void *arg)
{
	struct exec_job *job = arg;
	char message[SHIM_MESSAGE_MAX];
	for (;;) {
		ssize_t n = recv(fd, message, sizeof message, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			/* The shim ended (or died): no more events from it. */
			event_free(job->monitor_event);
			job->monitor_event = NULL;
			close(job->monitor_fd);
			job->monitor_fd = -1;
			exec_job_ended(job); /* reads the record, or records a lost shim */
			settle_record(job);
			return;
		}
		if (message[0] == SHIM_MSG_EXIT)
			exec_job_exit_notice(job, message + 1, (size_t)n - 1);
	}
}

void exec_job_monitor(struct exec_job *job, int fd)
{
	job->monitor_fd = fd;
	job->monitor_event = event_new(loop, fd, EV_READ | EV_PERSIST, on_monitor, job);
	event_add(job->monitor_event, NULL);
}

bool exec_stop(struct exec_job *job, int signal, int64_t grace_ms)
{
	char message[64];
	int n = snprintf(message, sizeof message, "%c%d %lld", SHIM_MSG_STOP, signal,
			 (long long)grace_ms);
	if (job->monitor_fd >= 0 &&
	    send(job->monitor_fd, message, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) == n)
		return true;
	exec_job_lost(job); /* no shim to ask: the tree is killed */
	return false;
}

/* ---- start of boxd ---- */

const char *exec_commands_cgroup(void)
{
	return cgroup_base;
}

const char *exec_shims_cgroup(void)
{
	return shim_cgroup;
}

static void prepare_cgroups(void)
{
	const struct boxd_config *config = settings;
	if (config->cgroup == CGROUP_MODE_OFF)
		return;
	struct cgroup_host host;
	if (!cgroup_discover(&host)) {
		log_msg(LOG_LEVEL_WARNING,
			"no cgroup hierarchy found: commands get their own process "
			"group, and a daemon that leaves it escapes timeouts");
		return;
	}
	/* Several boxd instances may share a machine: the run dir names ours. */
	uint32_t hash = 2166136261u;
	for (const char *p = config->run_dir; *p; p++)
		hash = (hash ^ (unsigned char)*p) * 16777619u;
	char tag[16];
	snprintf(tag, sizeof tag, "%08x", hash);
	char *missing = cgroup_prepare(&host, tag, config->commands_cgroup, &cgroup_base,
				       &shim_cgroup, &pids_base);
	if (missing)
		log_msg(LOG_LEVEL_WARNING, "%s", missing);
	free(missing);
	cgroup_host_free(&host);
}

struct value_list {
	char *data;
	size_t length;
};

static void append_value(const char *value, void *context)
{
	struct value_list *list = context;
	size_t n = strlen(value) + 1;
	list->data = xrealloc(list->data, list->length + n);
	memcpy(list->data + list->length, value, n);
	list->length += n;
}

/* New secrets are masked in the output of commands already running too. */
static void on_secrets_changed(void *context)
{
	struct value_list list = {xmalloc(1), 1};
	list.data[0] = SHIM_MSG_SECRETS;
	secrets_foreach_masked(append_value, &list);
	for (struct exec_job *job = jobs; job; job = job->next) {
		if (job->monitor_fd < 0 || job->state == EXEC_ENDED)
			continue;
		int room = (int)list.length + 4096;
		setsockopt(job->monitor_fd, SOL_SOCKET, SO_SNDBUF, &room, sizeof room);
		if (send(job->monitor_fd, list.data, list.length, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			log_msg(LOG_LEVEL_WARNING, "cannot give %s the new secrets: %s", job->id,
				strerror(errno));
	}
	explicit_bzero(list.data, list.length);
	free(list.data);
}

/* activity's `background`: a background command counts as use for its
 * first hour while it runs (API.md); it was last in use when it ended, or
 * when its hour ran out. Ended jobs are forgotten in time; activity keeps
 * the latest end it was told. */
static bool background_in_use(int64_t now_ms, int64_t *last_ms)
{
	bool active = false;
	for (struct exec_job *job = jobs; job; job = job->next) {
		if (!job->meta.background)
			continue;
		int64_t hour_out = job->meta.started_at + ACTIVITY_BACKGROUND_MS;
		bool running = job->state == EXEC_RUNNING;
		if (running && hour_out > now_ms) {
			active = true;
			continue;
		}
		int64_t last =
			running || job->exit.ended_at > hour_out ? hour_out : job->exit.ended_at;
		if (last > *last_ms)
			*last_ms = last;
	}
	return active;
}

static void contribute_health(cJSON *health)
{
	cJSON *procs = cJSON_GetObjectItem(health, "procs");
	if (!procs)
		procs = cJSON_AddObjectToObject(health, "procs");
	cJSON_DeleteItemFromObject(procs, "running");
	cJSON_AddNumberToObject(procs, "running", exec_running_background());
}

void exec_shutdown(void)
{
	exec_thaw_stop();
	exec_spawn_stop();
	/* Empty ones only: running commands keep their cgroups. The commands'
	 * cgroup of a unit (commands-cgroup) is systemd's to remove. */
	const char *dirs[] = {
		shim_cgroup, settings && settings->commands_cgroup ? NULL : cgroup_base, pids_base};
	for (size_t i = 0; i < 3; i++)
		if (dirs[i])
			rmdir(dirs[i]);
}

/* After an init (a claim, thaw or snapshot restore): the spare shims are
 * replaced, so that no process or id made before a snapshot and not yet
 * used serves a command after it (see exec_spawn_renew). */
static void renew_spares(void *unused)
{
	exec_spawn_renew();
}

void exec_init(struct event_base *base, const struct boxd_config *config)
{
	loop = base;
	settings = config;
	shim_program = helper_path("boxd-shim");
	char *procs = xasprintf("%s/procs", config->run_dir);
	if (mkdir(procs, 0700) != 0 && errno != EEXIST)
		log_msg(LOG_LEVEL_ERROR, "cannot create %s: %s", procs, strerror(errno));
	prepare_cgroups();
	exec_disk_init(config->work_dir);
	exec_adopt(procs);
	free(procs);
	exec_spawn_init(base, shim_program, shim_cgroup, exec_prepare_spec);
	exec_thaw_init(base, shim_cgroup, cgroup_base);
	health_register(contribute_health);
	activity_register_source(ACTIVITY_BACKGROUND, background_in_use);
	init_on_applied(renew_spares, NULL);
	secrets_on_change(on_secrets_changed, NULL);
}
