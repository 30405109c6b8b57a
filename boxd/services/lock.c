#include "lock.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activity.h"
#include "clock.h"
#include "keyring.h"
#include "log.h"
#include "random-id.h"
#include "redact.h"
#include "xalloc.h"

/* 16 random bytes in hex: new at every lock, forgotten at unlock. */
#define LOCK_TOKEN_BYTES 16
/* The kept lock: "SINCE TOKEN\nNOTE" (the note already masked). */
#define LOCK_KEPT_MAX 8192

static bool locked;
static char *lock_note;
static int64_t locked_since;
static char lock_token_text[2 * LOCK_TOKEN_BYTES + 1];
static char *keyring_name;

static void keep(void)
{
	if (!keyring_name)
		return;
	if (!locked) {
		keyring_clear(keyring_name);
		return;
	}
	char *kept = xasprintf("%" PRId64 " %s\n%s", locked_since, lock_token_text,
			       lock_note ? lock_note : "");
	char error[512];
	if (!keyring_save(keyring_name, kept, strlen(kept), error, sizeof error))
		log_msg(LOG_LEVEL_WARNING, "the lock: %s", error);
	memset(kept, 0, strlen(kept));
	free(kept);
}

void lock_init(const char *run_dir)
{
	free(keyring_name);
	keyring_name = xasprintf("boxd-lock:%s", run_dir);
	char kept[LOCK_KEPT_MAX + 1];
	long length = keyring_load(keyring_name, kept, LOCK_KEPT_MAX);
	if (length <= 0)
		return;
	kept[length] = '\0';
	int64_t since;
	char token[sizeof lock_token_text];
	int consumed = 0;
	if (sscanf(kept, "%" SCNd64 " %32[0-9a-f]\n%n", &since, token, &consumed) != 2 ||
	    strlen(token) != sizeof lock_token_text - 1 || consumed == 0) {
		log_msg(LOG_LEVEL_WARNING, "the kept lock is unreadable: the screen is not locked");
		keyring_clear(keyring_name);
		return;
	}
	locked = true;
	activity_begin(ACTIVITY_LOCK);
	locked_since = since;
	memcpy(lock_token_text, token, sizeof lock_token_text);
	lock_note = kept[consumed] ? xstrdup(kept + consumed) : NULL;
	memset(kept, 0, sizeof kept);
	log_msg(LOG_LEVEL_INFO, "locked: a person has had the screen since before this start");
}

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
	if (now_locked != locked)
		(now_locked ? activity_begin : activity_end)(ACTIVITY_LOCK);
	locked = now_locked;
	keep();
}

int64_t lock_since(void)
{
	return locked ? locked_since : 0;
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
