/* protect.h: boxd's side of the protected processes (lib/protected.h):
 * boxd itself and its workers. Each shim adds its own entry; commands'
 * shims read them all through their guard. */
#ifndef BOXD_PROTECT_H
#define BOXD_PROTECT_H

#include <sys/types.h>

/* RUN_DIR/protected: drops the entries of processes that are gone, then
 * adds boxd. Call once boxd sits in its final cgroup (the entry records it,
 * so a command that moves boxd into its own cgroup cannot take it along
 * when that cgroup is killed). */
void protect_init(const char *run_dir);
/* The directory, for the shims' specs. */
const char *protect_dir(void);
/* A worker boxd started (boxd-screen, boxd-archive), and its end. */
void protect_process(pid_t pid);
void unprotect_process(pid_t pid);

#endif
