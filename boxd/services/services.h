/* services.h: the box's services (API.md "Services: names, ports, the way
 * in and out"): a table of names, each with an address of its own, that
 * programs in the box and in its containers reach by name:port; boxd wires
 * each to a listener of the box or to an address outside, lets the control
 * plane in over vsock (ingress base + port), and says when each listens.
 * See docs/services.md for the way it is wired and why.
 *
 * Changes are applied one after another, each whole or not at all; the
 * table in force survives a restart of boxd (RUN_DIR/services.json). All of
 * it runs on the loop thread. */
#ifndef BOXD_SERVICES_H
#define BOXD_SERVICES_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "config.h"

struct event_base;

/* Loads the saved table and wires the box to it again (the relay's port is
 * new; the kernel's rules are still there, so forwarding never stopped). */
void services_init(struct event_base *base, const struct boxd_config *config);
void services_stop(void);

/* A change, parsed from the request body (false: 400 with the sentence). */
struct services_change;
struct services_change *services_change_replace(const cJSON *body, char *error, size_t size);
struct services_change *services_change_put(const char *name, const cJSON *body, char *error,
					    size_t size);
/* NULL with `*not_found` when there is no such entry. */
struct services_change *services_change_delete(const char *name, bool *not_found);

/* Applies a change after those before it: done() runs once, on the loop,
 * with SERVICES_APPLIED and the whole table in force (the caller owns it),
 * or with why it was not applied (nothing of it was): REFUSED when it does
 * not fit the table as it is by then (a port taken, an entry gone: the
 * caller's to fix), FAILED when the box could not be made to follow it. */
enum services_outcome { SERVICES_APPLIED, SERVICES_REFUSED, SERVICES_FAILED };
typedef void (*services_applied_fn)(void *arg, enum services_outcome outcome, cJSON *table,
				    const char *error);
void services_apply(struct services_change *change, services_applied_fn done, void *arg);

/* {"services": [...], "wired": bool, ...} as it is now. */
cJSON *services_table_json(void);
/* One entry as the API shows it, or NULL. */
cJSON *services_entry(const char *name);

/* Waits until entry `name` listens (box: its targetPort; external: its
 * address accepts) or `timeout_ms` passed: done(timed_out) runs once. When
 * it already listens (or is gone), done() runs before this returns and the
 * result is NULL; else a handle to cancel with before done() ran. */
typedef void (*services_wait_fn)(void *arg, bool timed_out);
struct services_waiter;
struct services_waiter *services_wait(const char *name, int timeout_ms, services_wait_fn done,
				      void *arg);
void services_wait_cancel(struct services_waiter *waiter);

#endif
