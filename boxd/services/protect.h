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
/* boxd back in the cgroup it started in, if a command moved it (a move
 * into a cgroup that is then frozen or killed would end it otherwise).
 * Cheap: one read of /proc/self/cgroup; run at the watchdog's pace. */
void protect_stay_home(void);
/* The directory, for the shims' specs. */
const char *protect_dir(void);
/* A worker boxd started (boxd-screen, boxd-archive), and its end. */
void protect_process(pid_t pid);
/* The same for a process that moves itself into the cgroup v2 dir
 * `cgroup` (NULL: where it is now), its home from then on. */
void protect_process_in(pid_t pid, const char *cgroup);
void unprotect_process(pid_t pid);

#endif
