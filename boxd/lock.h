/* lock.h: whether a person has the screen. While locked, routes flagged
 * API_REFUSED_WHILE_LOCKED answer 423 (the router applies the rule). Input
 * is the exception: the person's own calls carry the lock's token
 * (X-Takeover) and go through, so api-screen.c applies the rule itself
 * with lock_admits(). */
#ifndef BOXD_LOCK_H
#define BOXD_LOCK_H

#include <stdbool.h>

#include <cjson/cJSON.h>

bool lock_is_locked(void);
/* `note` may be NULL. */
void lock_set(bool locked, const char *note);
/* The takeover token of the lock in force (32 hex digits, random, new at
 * every lock), or NULL while unlocked. */
const char *lock_token(void);
/* True while unlocked, or when `token` (may be NULL) is the lock's token. */
bool lock_admits(const char *token);
/* {"locked":bool,"note":string|null,"since":ms|null}; never the token. */
cJSON *lock_to_json(void);

#endif
