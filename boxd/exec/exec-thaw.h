/* exec-thaw.h: keeps the shims' cgroup thawed (exec-thaw.c says why). */
#ifndef BOXD_EXEC_THAW_H
#define BOXD_EXEC_THAW_H

struct event_base;

/* Watches `shims` (the shims' cgroup v2 dir) and thaws it, and its
 * ancestors up to `top` (the commands' cgroup), whenever it is frozen; also
 * at once if it is now. No-op when either is NULL. */
void exec_thaw_init(struct event_base *base, const char *shims, const char *top);
/* After the shims' cgroup was made again (it had been removed). */
void exec_thaw_rearm(void);
void exec_thaw_stop(void);

#endif
