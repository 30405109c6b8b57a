/* lock.h: whether a person has the screen. While locked, routes flagged
 * API_REFUSED_WHILE_LOCKED answer 423 (the router applies the rule). Input
 * is the exception: the person's own calls carry the lock's token
 * (X-Takeover) and go through, so api-screen.c applies the rule itself
 * with lock_admits().
 *
 * A lock outlives a crash or restart of boxd: it is kept in the kernel
 * keyring (keyring.h), token included, never in a file a command could read
 * back. The token is handed out once, to the call that locks. */
#ifndef BOXD_LOCK_H
#define BOXD_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Takes back a lock a previous boxd on `run_dir` held. */
void lock_init(const char *run_dir);
bool lock_is_locked(void);
/* When the lock in force began (ms since the epoch), 0 while unlocked. */
int64_t lock_since(void);
/* Locks (a new token; `note` may be NULL) or unlocks. */
void lock_set(bool locked, const char *note);
/* The takeover token of the lock in force (32 hex digits, random, new at
 * every lock), or NULL while unlocked. */
const char *lock_token(void);
/* True while unlocked, or when `token` (may be NULL) is the lock's token. */
bool lock_admits(const char *token);
/* {"locked":bool,"note":string|null,"since":ms|null}; never the token. */
cJSON *lock_to_json(void);

#endif
