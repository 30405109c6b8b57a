/* files.h: files one at a time under the work dir (API.md, "Sync and
 * files"): stat, list, mkdir, move, chmod, remove, and a whole-or-nothing
 * write of one file. docs/sync.md ("Files one at a time") has the rules.
 *
 * Names are checked literally (no "..", no NUL, no name past NAME_MAX or
 * path past PATH_MAX), then resolved beneath the work dir (openat2
 * RESOLVE_BENEATH): a symbolic link whose target stays inside is the
 * user's layout and is followed on the way; one that leads out (or is
 * absolute) is refused. The entry a call names is never followed: a link
 * is stat'ed, moved and removed as a link. Writes happen with the box
 * user's file-system identity (setfsuid/setfsgid and its groups, on the
 * calling thread only), so the user's permissions decide and what is made
 * is theirs; reads are boxd's own, as downloads are. Each write leaves its
 * step. Loop thread only, except where said. */
#ifndef BOXD_FILES_H
#define BOXD_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "failure.h"

struct boxd_config;
struct event_base;

/* Paths are under `config`'s work dir, written as its user (kept, not
 * copied); long removals run on threads and end on `base`. */
void files_init(struct event_base *base, const struct boxd_config *config);

/* Why a call failed: a failure of the contract and a sentence naming the
 * path. */
struct files_error {
	enum failure failure;
	char message[1200];
};

/* `bytes` as the JSON string `key`; a name that is not UTF-8 is shown with
 * U+FFFD for its bad bytes and given exactly, in hex, as `<key>Hex`. */
void files_add_name(cJSON *json, const char *key, const char *bytes, size_t length);

/* "0644", "755", "4755": octal, at most 07777. False for anything else. */
bool files_parse_mode(const char *text, mode_t *mode);

/* The entry at `path` (the work dir itself for "" or the work dir's own
 * name), as {"path","type","size","mode","mtimeMs","target"}; NULL with a
 * failure (not_found when nothing is there). Caller frees. */
cJSON *files_stat(const char *path, struct files_error *error);

/* Opens the regular file at `path` for reading (its hash), or -1 with a
 * failure. */
int files_open_regular(const char *path, struct files_error *error);

/* {"entries":[stat...]} of the folder at `path`, `depth` levels deep
 * (1..8), sorted by path, links listed and not followed, at most
 * FILES_LIST_LIMIT entries and then "truncated": true. */
#define FILES_LIST_LIMIT 10000
cJSON *files_list(const char *path, int depth, struct files_error *error);

/* mkdir (with `parents`: the missing folders on the way, and an existing
 * folder is fine), a move (`overwrite`: replace what `to` names, a folder
 * only if empty), a chmod (not of a link). Each answers the stat of what
 * it made or changed. */
cJSON *files_mkdir(const char *path, bool parents, mode_t mode, struct files_error *error);
cJSON *files_move(const char *from, const char *to, bool overwrite, struct files_error *error);
cJSON *files_chmod(const char *path, mode_t mode, struct files_error *error);

/* Removes the entry at `path` (a folder's contents too with `recursive`,
 * never following a link), on a thread of its own; done() runs on the
 * loop with {"ok","path","removed"} or NULL and the failure (valid during
 * the call). False with `error` when refused at once (done() never runs). */
typedef void files_remove_done(void *arg, cJSON *answer, const struct files_error *error);
bool files_remove(const char *path, bool recursive, files_remove_done *done, void *arg,
		  struct files_error *error);

/* ---- a whole-or-nothing write (PUT /v1/files) ---- */

struct files_put;

/* Makes the folders on the way and a temporary file beside `path`, to be
 * filled through *body_fd (the caller's to close). `mode` < 0: the
 * replaced file's mode, else 0644. NULL with a failure when the path is
 * refused or names a folder. */
struct files_put *files_put_begin(const char *path, int mode, int *body_fd,
				  struct files_error *error);
/* The body is in (`written_error` 0) or failed with that errno. The data is
 * made durable on a thread (an fsync of a GiB takes seconds the loop must
 * not wait), then done() runs on the loop with NULL, or the failure (a full
 * disk: disk_full; valid during the call). `put` must live until then. */
typedef void files_put_done(void *arg, const struct files_error *error);
void files_put_written(struct files_put *put, int written_error, files_put_done *done, void *arg);
/* A new fd reading the temporary file from its start (to hash it). */
int files_put_reader(struct files_put *put);
/* Puts the file in place (its mode, then a rename over the old one) and
 * answers its stat. */
cJSON *files_put_commit(struct files_put *put, struct files_error *error);
/* Frees it; a temporary file not committed is removed. */
void files_put_free(struct files_put *put);

#endif
