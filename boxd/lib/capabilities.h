/* capabilities.h: boxd keeps only the capabilities it uses itself (libcap).
 *
 * The set kept (CAPABILITIES_KEPT in capabilities.c, and docs/confinement.md):
 * CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_KILL,
 * CAP_SETUID, CAP_SETGID, CAP_NET_BIND_SERVICE, CAP_SYS_TIME, CAP_SYS_PTRACE:
 * read and write any user's files under the work dir (sync, files, logs),
 * signal commands of any user, let forked workers switch to an unprivileged
 * user, listen on a vsock port below 1024, set the clock (POST /v1/init),
 * name the process behind a port (GET /v1/ports reads the fd links of
 * processes with more capabilities than boxd's, which the kernel's ptrace
 * access check refuses without it; boxd never attaches to a process).
 * CAP_SYS_ADMIN stays permitted but not effective: raised around the two
 * ioctls that credit an init's entropy and reseed the kernel's generator,
 * and lowered at once; so does CAP_NET_ADMIN, raised around asking the kernel
 * for its process events (the lock's hand-back). Everything else
 * (CAP_SYS_MODULE, ...) leaves the effective, permitted and inheritable sets.
 *
 * The bounding set stays full on purpose: boxd-shim is exec'd by root, and a
 * root exec gets the full bounding set back, so commands keep every
 * capability a root shell has (Docker, debuggers, mounts). The drop guards
 * boxd's own code paths (a path mix-up cannot load a module or mount), and
 * the forked workers that never exec. */
#ifndef BOXD_CAPABILITIES_H
#define BOXD_CAPABILITIES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/capability.h>

/* Drops the calling thread's capabilities to the kept set. Call it early in
 * main, before any thread starts (capabilities are per thread). A no-op
 * success when boxd runs without privileges. False with a sentence when the
 * kernel refuses. */
bool capabilities_drop(char *error, size_t error_size);

/* Makes a permitted capability effective for the calling thread (`on`), or
 * not again. False when the thread does not have it permitted. */
bool capabilities_raise(cap_value_t value, bool on);

/* Writes the kept set as text ("cap_chown,cap_kill,...=ep") into `buffer`. */
void capabilities_describe(char *buffer, size_t size);

#endif
