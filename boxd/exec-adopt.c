/* exec-adopt.c: finding the shims again when boxd starts.
 *
 * Every command has a state dir RUN_DIR/procs/<id>. At start each is one of:
 * ended (an exit record: listed with it), running (its shim answers on its
 * socket: followed again), or orphaned (no record and no shim: the shim was
 * killed while boxd was away; its tree is stopped and the end recorded), or
 * never started (no meta: removed). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "exec-internal.h"
#include "log.h"
#include "xalloc.h"

static void adopt_one(const char *id)
{
	struct shim_meta meta;
	char *path = exec_state_path(id, "meta");
	bool known = shim_meta_read(&meta, path);
	free(path);
	if (!known || strcmp(meta.id, id) != 0) {
		if (known)
			shim_meta_free(&meta);
		/* A shim that never got as far as starting its command. */
		exec_remove_state_dir(id);
		return;
	}
	struct exec_job *job = exec_job_add(id);
	job->meta = meta;
	job->adopted = true; /* ends seen now happened while boxd was away */
	int fd = exec_connect(job);
	if (fd >= 0) {
		/* Running (or lingering after its exit): follow it again. */
		exec_job_monitor(job, fd);
		char *exit_path = exec_state_path(id, "exit");
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
}
