/* proc-events.h: the programs started on the machine, by anyone, as the
 * kernel tells them (the process events connector, NETLINK_CONNECTOR).
 *
 * Listened to only while a person has the screen: the lock's hand-back
 * lists the commands started meanwhile (handback.h). The kernel says only
 * "pid N ran exec"; what it ran and who started it are read from /proc at
 * once, and a program that ended before that read is told with what is
 * still known. Kernels before 6.6 answer only a listener with CAP_NET_ADMIN
 * (raised for the one message: capabilities.h); all want the machine's
 * first namespaces (boxd has both in a box). */
#ifndef BOXD_PROC_EVENTS_H
#define BOXD_PROC_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct event_base;

/* One exec, as read right after it. Valid during the callback only. */
struct proc_exec {
	pid_t pid;
	pid_t parent;          /* 0 when unknown */
	int64_t at_ms;         /* when boxd heard of it, ms since the epoch */
	const char *command;   /* its arguments joined by spaces (at most 1000
			       * bytes, unmasked); NULL when it ended first */
	bool parent_at_prompt; /* the parent leads a session on a terminal: a
				* shell a person types into */
	const char *terminal;  /* then that terminal: "pts/3", "tty2" */
	const char *job_id;    /* the boxd command whose cgroup it is in, or NULL */
};

typedef void (*proc_exec_fn)(void *arg, const struct proc_exec *exec);

/* Starts listening on `base`; each exec is told to `fn`. False, with a
 * sentence in `why`, when the kernel refuses. Listening already: true. */
bool proc_events_start(struct event_base *base, proc_exec_fn fn, void *arg, char *why,
		       size_t why_size);
/* True when nothing of use is heard: the kernel answered the listen with
 * an error, or did not tell the fork boxd makes at the start to check by
 * boxd's own pid (outside the machine's first pid namespace it sends
 * nothing, or other processes' numbers). Reads what is queued first. */
bool proc_events_refused(void);
void proc_events_stop(void);

#endif
