/* lock.h: whether a person has the screen. While locked, routes flagged
 * API_REFUSED_WHILE_LOCKED answer 423 (the router applies the rule). */
#ifndef BOXD_LOCK_H
#define BOXD_LOCK_H

#include <stdbool.h>

#include <cjson/cJSON.h>

bool lock_is_locked(void);
/* `note` may be NULL. */
void lock_set(bool locked, const char *note);
/* {"locked":bool,"note":string|null,"since":ms|null} */
cJSON *lock_to_json(void);

#endif
