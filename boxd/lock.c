#include "lock.h"

#include <stdint.h>
#include <stdlib.h>

#include "clock.h"
#include "redact.h"

static bool locked;
static char *lock_note;
static int64_t locked_since;

bool lock_is_locked(void)
{
	return locked;
}

void lock_set(bool now_locked, const char *note)
{
	free(lock_note);
	lock_note = now_locked && note ? redact_text(note) : NULL;
	if (now_locked && !locked)
		locked_since = clock_now_ms();
	locked = now_locked;
}

cJSON *lock_to_json(void)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddBoolToObject(root, "locked", locked);
	if (lock_note)
		cJSON_AddStringToObject(root, "note", lock_note);
	else
		cJSON_AddNullToObject(root, "note");
	if (locked)
		cJSON_AddNumberToObject(root, "since", (double)locked_since);
	else
		cJSON_AddNullToObject(root, "since");
	return root;
}
