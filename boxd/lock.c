#include "lock.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "random-id.h"
#include "redact.h"

/* 16 random bytes in hex: new at every lock, forgotten at unlock. */
#define LOCK_TOKEN_BYTES 16

static bool locked;
static char *lock_note;
static int64_t locked_since;
static char lock_token_text[2 * LOCK_TOKEN_BYTES + 1];

bool lock_is_locked(void)
{
	return locked;
}

void lock_set(bool now_locked, const char *note)
{
	free(lock_note);
	lock_note = now_locked && note ? redact_text(note) : NULL;
	if (now_locked && !locked) {
		locked_since = clock_now_ms();
		random_hex(lock_token_text, LOCK_TOKEN_BYTES);
	}
	if (!now_locked)
		memset(lock_token_text, 0, sizeof lock_token_text);
	locked = now_locked;
}

const char *lock_token(void)
{
	return locked ? lock_token_text : NULL;
}

bool lock_admits(const char *token)
{
	if (!locked)
		return true;
	if (!token || strlen(token) != sizeof lock_token_text - 1)
		return false;
	/* Compared whole, so the time taken tells nothing of the token. */
	unsigned char differ = 0;
	for (size_t i = 0; i < sizeof lock_token_text - 1; i++)
		differ |= (unsigned char)(token[i] ^ lock_token_text[i]);
	return differ == 0;
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
