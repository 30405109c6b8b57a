/* secrets.h: the secret values boxd holds, and the masked set built from
 * them.
 *
 * Values come from `PUT /v1/secrets` (environment variables of every later
 * command) and from secret-looking settings of `PUT /v1/env/{service}`
 * files. They live in locked, undumpable memory (boxd itself is marked
 * undumpable) and are wiped when replaced; to survive a restart of boxd,
 * even a kill -9, the PUT set is also kept in the kernel keyring (a "user"
 * key in the user keyring, named after the run dir), never in a file.
 * Service settings are read again from their env files at start.
 * Everything here runs on the event loop thread (boxd has no other). */
#ifndef BOXD_SECRETS_H
#define BOXD_SECRETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "mask.h"

/* Marks boxd undumpable, restores the set kept in the keyring, reads the
 * service env files under work_dir/.sbx/env, and installs the masker as
 * the redact filter (log lines, errors, steps). */
void secrets_init(const char *run_dir, const char *work_dir);
/* Drops the masked set (the keyring keeps its copy for the next start). */
void secrets_shutdown(void);

/* Replaces the PUT set. Names must be environment variable names; on a bad
 * one returns false with a sentence in `error` and changes nothing. */
bool secrets_replace(const char *const *names, const char *const *values, size_t count, char *error,
		     size_t error_size);
/* Sorted names of the PUT set, as a JSON array. */
cJSON *secrets_names_json(void);
size_t secrets_count(void);
/* Calls `fn` for each PUT secret (for the environment of a command). */
void secrets_foreach(void (*fn)(const char *name, const char *value, void *ctx), void *ctx);

/* Replaces the masked values contributed by a service's env file. */
void secrets_set_service_values(const char *service, const char *const *values, size_t count);
/* Parses dotenv `text` of a service and makes its secret-looking values
 * (and the passwords of URLs) masked. Returns the names as a JSON array, or
 * NULL with a sentence in `error` when the text is malformed. */
cJSON *secrets_apply_env(const char *service, const char *text, size_t len, char *error,
			 size_t error_size);

/* Writes WORK/.sbx/env/<service>.env (0600, whole or not at all, on disk
 * before it returns) with the dotenv `text`, then applies it
 * (secrets_apply_env): the path written (caller frees), and its names in
 * *names. NULL with errno set and a sentence naming the path when the file
 * cannot be written. `service` is a safe file name (the caller checks). */
char *secrets_write_env(const char *service, const char *text, size_t len, cJSON **names,
			char *error, size_t error_size);

/* `text` masked, as a new string (caller frees). */
char *secrets_mask_text(const char *text);
/* `length` bytes masked (they may hold NULs), as a new buffer of
 * `*out_length` bytes (caller frees). */
char *secrets_mask_bytes(const char *data, size_t length, size_t *out_length);

/* Calls `fn` for every masked value (the PUT values, secret-looking env
 * settings and their URL passwords), to hand the set to another process
 * (the shim) that compiles its own with mask_set_new(). */
void secrets_foreach_masked(void (*fn)(const char *value, void *ctx), void *ctx);
/* Calls `fn(ctx)` on the loop thread after every change of the masked set,
 * so running commands can be given the new values. At most 8 listeners. */
void secrets_on_change(void (*fn)(void *ctx), void *ctx);

#endif
