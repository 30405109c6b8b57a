/* exec-adopt.c: finding the commands again when boxd starts.
 *
 * Every command has a state dir RUN_DIR/procs/<id>. At start each is one of:
 * ended (an exit record: listed with it), running (its shim answers on its
 * socket: followed again), or orphaned (no record and no shim: the shim was
 * killed while boxd was away; its tree is stopped and the end recorded), or
 * never started (no meta: removed, with what a spare made ahead for it).
 *
 * The run dir is RAM in a box: a reboot or a power cut empties it, while
 * the commands' logs in the work dir stay. So background commands are also
 * recorded in the work dir, WORK/.sbx/procs/<id>.meta (and <id>.exit once
 * ended); one found there and not in the run dir ran before the box went
 * down. It is listed as it ended, or, with no exit, as lost with the
 * restart (never as running, never silently gone). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "exec-internal.h"
#include "log.h"
#include "shim-protocol.h"
#include "xalloc.h"

static char *disk_dir; /* WORK/.sbx/procs */

static char *disk_path(const char *id, const char *suffix)
{
	return xasprintf("%s/%s.%s", disk_dir, id, suffix);
}

void exec_disk_init(const char *work_dir)
{
	char *sbx = xasprintf("%s/.sbx", work_dir);
	mkdir(sbx, 0755);
	free(sbx);
	disk_dir = xasprintf("%s/.sbx/procs", work_dir);
	if (mkdir(disk_dir, 0700) != 0 && errno != EEXIST)
		log_msg(LOG_LEVEL_WARNING,
			"cannot create %s (%s): background commands will not be "
			"listed after a reboot",
			disk_dir, strerror(errno));
}

void exec_disk_keep_start(const struct exec_job *job)
{
	if (!disk_dir || !job->meta.background)
		return;
	/* On disk at once: the work dir's copy exists for a power cut, which
	 * otherwise finds the file named but empty (delayed allocation). Only
	 * background commands pay it, and only at their start and end. */
	char *path = disk_path(job->id, SHIM_STATE_META);
	shim_meta_write_durable(&job->meta, path); /* best effort: a full disk loses only this */
	free(path);
}

void exec_disk_keep_end(const struct exec_job *job)
{
	if (!disk_dir || !job->meta.background)
		return;
	char *path = disk_path(job->id, SHIM_STATE_EXIT);
	exit_record_write_durable(&job->exit, path);
	free(path);
}

void exec_disk_forget(const char *id)
{
	if (!disk_dir)
		return;
	const char *suffixes[] = {SHIM_STATE_META, SHIM_STATE_EXIT};
	for (size_t i = 0; i < 2; i++) {
		char *path = disk_path(id, suffixes[i]);
		unlink(path);
		free(path);
	}
}

/* A background command recorded on disk whose run-dir state is gone: the
 * box went down (a reboot, a power cut) after it started. */
static void adopt_from_disk(const char *id)
{
	char *meta_path = disk_path(id, SHIM_STATE_META),
	     *exit_path = disk_path(id, SHIM_STATE_EXIT);
	struct shim_meta meta;
	if (!shim_meta_read(&meta, meta_path) || strcmp(meta.id, id) != 0) {
		unlink(meta_path);
		free(meta_path);
		free(exit_path);
		return;
	}
	struct exec_job *job = exec_job_add(id);
	job->meta = meta;
	job->adopted = true;
	if (!exit_record_read(&job->exit, exit_path)) {
		/* No exit: it ran when the box went down. Its last output is the
		 * best clock for when that was. */
		struct stat info;
		int64_t last_output = job->meta.log_path && stat(job->meta.log_path, &info) == 0
					      ? (int64_t)info.st_mtime * 1000
					      : job->meta.started_at;
		job->exit = (struct exit_record){
			.exit_code = EXIT_RECORD_UNKNOWN,
			.cpu_ms = EXIT_RECORD_UNKNOWN,
			.peak_memory_bytes = EXIT_RECORD_UNKNOWN,
			.oom_kills = EXIT_RECORD_UNKNOWN,
			.ended_at = last_output,
			.duration_ms = last_output - job->meta.started_at,
			.message = xstrdup(
				"lost: the box restarted (a reboot or a power cut) while this "
				"command ran; what it wrote until then is in its log"),
		};
	}
	free(meta_path);
	free(exit_path);
	exec_job_finish(job);
}

static void adopt_disk(void)
{
	DIR *listing = disk_dir ? opendir(disk_dir) : NULL;
	if (!listing)
		return;
	int found = 0;
	struct dirent *entry;
	while ((entry = readdir(listing))) {
		char id[64];
		size_t length = strlen(entry->d_name);
		if (length < 6 || length - 5 >= sizeof id ||
		    strcmp(entry->d_name + length - 5, ".meta") != 0)
			continue;
		memcpy(id, entry->d_name, length - 5);
		id[length - 5] = '\0';
		if (id[0] != 'b' || id[1] != '_' || exec_find(id))
			continue;
		adopt_from_disk(id);
		found++;
	}
	closedir(listing);
	if (found)
		log_msg(LOG_LEVEL_INFO,
			"found %d background commands from before the box restarted", found);
}

static void adopt_one(const char *id)
{
	struct shim_meta meta;
	char *path = exec_state_path(id, SHIM_STATE_META);
	bool known = shim_meta_read(&meta, path);
	free(path);
	if (!known || strcmp(meta.id, id) != 0) {
		if (known)
			shim_meta_free(&meta);
		/* A shim that never got as far as starting its command, or a
		 * spare's preparation (a spare killed outright leaves it). */
		exec_remove_prepared(id);
		return;
	}
	struct exec_job *job = exec_job_add(id);
	job->meta = meta;
	job->adopted = true; /* ends seen now happened while boxd was away */
	int fd = exec_connect(job);
	if (fd >= 0) {
		/* Running (or lingering after its exit): follow it again. */
		exec_job_monitor(job, fd);
		char *exit_path = exec_state_path(id, SHIM_STATE_EXIT);
		bool ended = access(exit_path, F_OK) == 0;
		free(exit_path);
		if (ended)
			exec_job_ended(job);
		job->adopted = false;
		return;
	}
	/* No shim: its record if it wrote one, else it was killed. */
	exec_job_ended(job);
}

void exec_adopt(const char *dir)
{
	DIR *listing = opendir(dir);
	if (!listing)
		return;
	int adopted = 0;
	struct dirent *entry;
	while ((entry = readdir(listing))) {
		const char *id = entry->d_name;
		if ((id[0] != 'c' && id[0] != 'b') || id[1] != '_')
			continue;
		adopt_one(id);
		adopted++;
	}
	closedir(listing);
	if (adopted)
		log_msg(LOG_LEVEL_INFO, "found %d commands from before this start", adopted);
	adopt_disk();
}
