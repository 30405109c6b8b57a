/* changes.h: what changed under the work dir, since a cursor (API.md, "Sync
 * and files", "Changes"; docs/changes.md).
 *
 * boxd watches the whole work dir from its start (changes-watch.c) and keeps
 * a bounded journal of what it saw. A cursor is an opaque string naming this
 * boxd's journal and a point in it; changes_since() answers, for a cursor,
 * one coalesced entry per path (docs/changes.md has the exact rules), or
 * `all` when the journal cannot answer exactly (the cursor is older than what
 * is kept, comes from another boxd, or the watch lost events). Used by the
 * route and by the lock's hand-back alike. Paths are relative to the work
 * dir ("" is the work dir itself). */
#ifndef BOXD_CHANGES_H
#define BOXD_CHANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "failure.h"

struct event_base;

enum change_kind { CHANGE_CREATED, CHANGE_MODIFIED, CHANGE_REMOVED, CHANGE_MOVED };
enum change_type { CHANGE_FILE, CHANGE_DIR, CHANGE_LINK };

struct change {
	enum change_kind kind;
	enum change_type type;
	bool modified; /* a moved entry whose content changed after the move too */
	char *path;    /* relative to the work dir */
	char *from;    /* moves: where it was */
};

struct change_list {
	struct change *items;
	size_t count;
	bool all;     /* read everything again: the journal cannot say exactly */
	char *cursor; /* where the answer ends: pass it as the next `since` */
};

/* What a query covers: the folder `under` ("" for all the work dir) and, with
 * `internals`, what is left out by default (`.git` internals, `.sbx`). */
struct changes_scope {
	const char *under;
	bool internals;
};

/* Starts watching the work dir (incrementally: the loop stays free). */
void changes_init(struct event_base *base, const struct boxd_config *config);
void changes_stop(void);

/* The current cursor; caller frees. */
char *changes_cursor(void);

/* The changes since `cursor` in `scope` into `out` (out->cursor set).
 * FAILURE_BAD_REQUEST with a sentence in `why` for a malformed cursor. */
bool changes_since(const char *cursor, const struct changes_scope *scope, struct change_list *out,
		   enum failure *failure, char *why, size_t why_size);
void change_list_free(struct change_list *list);

/* {"path","kind","type"[,"from"][,"modified"]}, paths absolute under
 * `work_dir` (with pathHex/fromHex for names that are not UTF-8). */
cJSON *change_to_json(const struct change *change, const char *work_dir);
const char *change_kind_name(enum change_kind kind);
const char *change_type_name(enum change_type type);

/* A follower: `changed(arg)` is called on the loop after each batch of
 * events recorded (then changes_since() from its last cursor tells what). */
struct changes_follower {
	void (*changed)(void *arg);
	void *arg;
	struct changes_follower *next;
};
void changes_follow(struct changes_follower *follower);
void changes_unfollow(struct changes_follower *follower);

/* For docs/changes.md's "how to look inside" and the bench: counts and
 * bytes of the journal and the watch. */
struct changes_stats {
	size_t entries, journal_bytes;
	size_t watched_dirs, watch_bytes;
	uint64_t seq, floor;
	bool complete;
	unsigned overflows;
};
void changes_stats(struct changes_stats *stats);

#endif
