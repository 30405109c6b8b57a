#include "protect.h"

#include <stdlib.h>
#include <unistd.h>

#include "log.h"
#include "protected.h"
#include "xalloc.h"

static char *dir;

void protect_init(const char *run_dir)
{
	free(dir);
	dir = xasprintf("%s/protected", run_dir);
	protected_prune(dir);
	protect_process(getpid());
}

const char *protect_dir(void)
{
	return dir;
}

void protect_process(pid_t pid)
{
	if (dir && !protected_add(dir, pid))
		log_msg(LOG_LEVEL_WARNING, "cannot record pid %d in %s: commands could signal it", (int)pid, dir);
}

void unprotect_process(pid_t pid)
{
	if (dir)
		protected_remove(dir, pid);
}
