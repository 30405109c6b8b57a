/* changes-internal.h: the face between the journal (changes.c), its
 * coalescing (changes-coalesce.c) and the watcher (changes-watch.c). */
#ifndef BOXD_CHANGES_INTERNAL_H
#define BOXD_CHANGES_INTERNAL_H

#include "changes.h"

/* One event as recorded. `dead` entries were collapsed into a later one. */
struct journal_entry {
	uint64_t seq;
	int64_t at_ms;
	uint8_t kind, type;
	bool dead;
	char *path;
	char *from;
};

/* ---- the journal (changes.c), for the watcher ---- */

void journal_record(enum change_kind kind, enum change_type type, const char *path,
		    const char *from);
/* Events may have been lost (overflow, a full watch table): no cursor handed
 * out so far can be answered exactly. Until journal_complete(), none can. */
void journal_lost(void);
/* The watch set covers the whole tree again: cursors from now on answer. */
void journal_complete(void);
/* The end of a batch of events: followers are told. */
void journal_flush(void);

/* ---- coalescing (changes-coalesce.c) ---- */

/* The coalesced changes of `entries` (in seq order, dead ones skipped),
 * limited to `scope`, appended to `out`. `work_dir` is read to list what a
 * folder moved into the scope from outside it holds. */
void changes_coalesce(const struct journal_entry *entries, size_t count,
		      const struct changes_scope *scope, const char *work_dir,
		      struct change_list *out);
/* Whether `path` is in `scope` (under its folder, and not left out). */
bool changes_in_scope(const char *path, const struct changes_scope *scope);

/* ---- the watcher (changes-watch.c) ---- */

void watch_start(struct event_base *base, const char *work_dir);
void watch_stop(void);
/* Reads every event queued and every new folder, so an answer holds what
 * happened before its request. */
void watch_settle(void);
void watch_stats(struct changes_stats *stats);

#endif
