/* sandbox.h: seccomp filters (libseccomp) for boxd's workers and commands.
 *
 * Workers that parse outside input (archives, manifests) run under an
 * allowlist: a policy names every syscall the worker may make; anything else
 * kills the worker (SIGSYS), so a forgotten rule shows as a dead worker, never
 * as a hole. Architecture is checked first (a foreign or x32 syscall kills
 * too). A few libc probes that are harmless to refuse (openat, ioctl, rseq)
 * get an errno instead, unless the policy allows them. Debug mode (or
 * BOXD_SANDBOX_DEBUG=1 in the environment) makes a forbidden syscall print
 * "sandbox <policy>: forbidden syscall <name> (<number>)" on stderr and exit
 * with status 159, so a person can add the missing rule.
 *
 * Commands get the opposite: everything allowed except signals (and ptrace)
 * aimed at boxd and at their own shim; see sandbox_install_command_filter(). */
#ifndef BOXD_SANDBOX_H
#define BOXD_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Exit status of a worker that made a forbidden syscall in debug mode. */
#define SANDBOX_DEBUG_EXIT 159

struct sandbox_policy;

/* `name` appears in debug reports ("archive", "manifest"). */
struct sandbox_policy *sandbox_policy_new(const char *name);
void sandbox_policy_free(struct sandbox_policy *policy);
void sandbox_policy_set_debug(struct sandbox_policy *policy, bool debug);

/* Allows each syscall of a NULL-terminated list of names. */
void sandbox_policy_allow(struct sandbox_policy *policy, const char *const *syscalls);
/* Allows `syscall` only when argument `arg` (0-5) equals `value`, e.g.
 * fcntl with F_GETFL. Several calls for one syscall allow any of them. */
void sandbox_policy_allow_if(struct sandbox_policy *policy, const char *syscall,
			     unsigned arg, uint64_t value);
/* Refuses `syscall` with `errno_value` instead of killing. */
void sandbox_policy_deny(struct sandbox_policy *policy, const char *syscall, int errno_value);

/* What any worker needs to compute, allocate, read and write its pipes and
 * exit: read, write, close, mmap, brk, futex, exit_group, ... */
extern const char *const sandbox_base_syscalls[];

/* Installs the policy on the calling process, all its threads, and
 * everything it forks; sets NO_NEW_PRIVS. Returns false with a sentence
 * naming the offending rule (an unknown syscall name, say) when any rule
 * given before failed or the kernel refused the filter: the caller must then
 * exit without touching its input (fail closed). */
bool sandbox_policy_install(struct sandbox_policy *policy, char *error, size_t error_size);

/* The commands' filter, for boxd-shim: call it in the process that will exec
 * the command's shell, while still root (CAP_SYS_ADMIN lets it skip
 * NO_NEW_PRIVS, so sudo and setuid programs keep working in commands), before
 * any change of user. The command and all its descendants then get EPERM
 * from kill, tkill, tgkill, rt_sigqueueinfo and rt_tgsigqueueinfo aimed at
 * boxd_pid, at any thread boxd has now, or at shim_pid (as a pid or as a
 * process group: -pid), and from kill(-1, ...), the broadcast that would hit
 * every process of the box; ptrace and process_vm_writev on those are
 * refused too. pidfd_send_signal answers ENOSYS, so callers fall back to
 * kill(), which is checked. Everything else is allowed.
 *
 * Limits (seccomp sees numbers only): the pids are those of the moment of
 * install, so after a restart of boxd the new boxd is not protected from
 * commands started before it; a thread boxd starts later is not covered; a
 * process in another pid namespace naming the same number is refused; a
 * determined root can still stop boxd by other means (systemctl, cgroup.kill,
 * /proc/PID/mem). It guards against `kill -9 -1`, `pkill -f ...` and
 * `killall`, not against malice. Without CAP_SYS_ADMIN (boxd not root) the
 * filter is installed with NO_NEW_PRIVS. `boxd_pid` <= 0 protects only the
 * shim. Returns false with a sentence on failure. */
bool sandbox_install_command_filter(pid_t boxd_pid, pid_t shim_pid, char *error, size_t error_size);

#endif
