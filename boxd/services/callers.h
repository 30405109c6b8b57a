/* callers.h: who is calling boxd over its unix socket.
 *
 * Commands run as root and reach the socket like anyone on the box: that is
 * by design for reads and for running more commands. The routes that act for
 * the control plane or the person at the screen (init, lock, secrets and
 * service settings) must not be theirs, so the router asks here about the
 * peer (SO_PEERCRED's pid) before such a route runs. A command is known by
 * where it lives, never by what it claims: a process in a command's cgroup
 * (below the commands' cgroup, anywhere but the keeper's), or one descending
 * from a protected process other than boxd (its shim, as every command's
 * tree does: the shim is its subreaper, so orphans stay below it). */
#ifndef BOXD_CALLERS_H
#define BOXD_CALLERS_H

#include <stdbool.h>
#include <sys/types.h>

/* `protected_dir`: RUN_DIR/protected (protect.h); `commands_cgroup`: the
 * cgroup v2 dir the commands' cgroups are made in, or NULL without one.
 * Both are kept, not copied. */
void callers_init(const char *protected_dir, const char *commands_cgroup);

/* True when the local process `pid` is one of boxd's commands or was
 * started by one; also when it is gone (who it was can no longer be told:
 * the answer that fails closed). */
bool callers_is_command(pid_t pid);

#endif
