#include "protect.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "log.h"
#include "protected.h"
#include "xalloc.h"

static char *dir;
static char home[PATH_MAX]; /* boxd's own cgroup v2 dir at its start */

void protect_init(const char *run_dir)
{
	free(dir);
	dir = xasprintf("%s/protected", run_dir);
	protected_prune(dir);
	protected_cgroup_of(getpid(), home, sizeof home);
	protect_process(getpid());
}

void protect_stay_home(void)
{
	char now[PATH_MAX];
	protected_cgroup_of(getpid(), now, sizeof now);
	if (!home[0] || !now[0] || !strcmp(now, home))
		return;
	if (cgroup_move(home, getpid()))
		log_msg(LOG_LEVEL_WARNING, "boxd had been moved to %s (by a command?): back in %s",
			now, home);
	else
		log_msg(LOG_LEVEL_ERROR, "boxd has been moved to %s and cannot go back to %s: %s",
			now, home, strerror(errno));
}

const char *protect_dir(void)
{
	return dir;
}

void protect_process(pid_t pid)
{
	protect_process_in(pid, NULL);
}

void protect_process_in(pid_t pid, const char *cgroup)
{
	if (dir && !protected_add_in(dir, pid, cgroup))
		log_msg(LOG_LEVEL_WARNING, "cannot record pid %d in %s: commands could signal it",
			(int)pid, dir);
}

void unprotect_process(pid_t pid)
{
	if (dir)
		protected_remove(dir, pid);
}
