#include "callers.h"

#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "cgroup.h"
#include "protected.h"

/* How far up the parent chain to look: deeper trees than this are a
 * command's own doing (a chain that long never leads out of a shim). */
#define ANCESTORS_MAX 4096

static const char *protected_dir, *commands_cgroup;

void callers_init(const char *protected, const char *commands)
{
	protected_dir = protected;
	commands_cgroup = commands;
}

/* In the commands' cgroup and not the keeper (boxd-shim --keep-cgroup, the
 * commands' unit's own process): a command's cgroup, or one a command made
 * or moved itself to inside that tree. */
static bool in_commands_cgroup(pid_t pid, bool *gone)
{
	if (!commands_cgroup)
		return false;
	char dir[PATH_MAX];
	protected_cgroup_of(pid, dir, sizeof dir);
	if (!dir[0]) {
		*gone = protected_start_time(pid) == 0;
		return false;
	}
	if (!cgroup_dir_within(dir, commands_cgroup))
		return false;
	char keeper[PATH_MAX];
	snprintf(keeper, sizeof keeper, "%s/keeper", commands_cgroup);
	return !cgroup_dir_within(dir, keeper);
}

/* Below a protected process other than boxd: a shim (every command's
 * parent and subreaper), the spare maker, a worker. */
static bool below_protected(pid_t pid, bool *gone)
{
	pid_t self = getpid();
	pid_t at = protected_parent(pid);
	if (at == 0) {
		*gone = true;
		return false;
	}
	for (int depth = 0; at > 1 && depth < ANCESTORS_MAX; depth++) {
		if (at == self)
			return false; /* boxd's own child: a worker of boxd's */
		if (protected_dir && protected_is(protected_dir, at))
			return true;
		at = protected_parent(at);
	}
	return false;
}

bool callers_is_command(pid_t pid)
{
	if (pid <= 0)
		return false; /* not a local process: the host, over vsock */
	bool gone = false;
	if (in_commands_cgroup(pid, &gone) || below_protected(pid, &gone))
		return true;
	return gone;
}
