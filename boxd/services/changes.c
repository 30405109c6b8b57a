/* changes.c: the changes journal (changes.h): entries, cursors, bounds,
 * the collapse of repeated writes, followers.
 *
 * Entries get increasing sequence numbers; a cursor is the journal's id and
 * the last number its holder has seen. `floor` is the oldest cursor still
 * answerable: dropping an entry past the bound raises it to that entry's
 * number, lost events raise it to the number current when the watch is whole
 * again. A cursor below the floor, or from another journal, answers `all`. */
#include "changes.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "changes-internal.h"
#include "clock.h"
#include "files.h"
#include "log.h"
#include "path-map.h"
#include "random-id.h"
#include "xalloc.h"

/* The journal keeps at least the newest `keep` entries and everything of the
 * last `keep_sec`; never more than HARD_FACTOR * keep, so a build writing a
 * million files within the hour cannot grow boxd without bound. */
#define HARD_FACTOR 4

static struct {
	char id[17]; /* this journal, in every cursor */
	char *work_dir;
	struct journal_entry *entries; /* entries[start .. start + count) */
	size_t start, count, capacity, live;
	uint64_t seq, floor;
	bool complete;
	unsigned overflows;
	size_t keep;
	int64_t keep_ms;
	size_t path_bytes;
	/* path -> its latest entry's seq + 1 when that entry is a `modified`
	 * nothing has touched since (the collapse's candidates). */
	struct path_map *last_modified;
	struct changes_follower *followers;
	struct event *flush; /* followers told on the loop, never inside a query */
} journal;

static void add_path(cJSON *object, const char *name, const char *work_dir, const char *relative)
{
	char *path = xasprintf(*relative ? "%s/%s" : "%s%s", work_dir, relative);
	files_add_name(object, name, path, strlen(path));
	free(path);
}

cJSON *change_to_json(const struct change *change, const char *work_dir)
{
	cJSON *item = cJSON_CreateObject();
	add_path(item, "path", work_dir, change->path);
	cJSON_AddStringToObject(item, "kind", change_kind_name(change->kind));
	cJSON_AddStringToObject(item, "type", change_type_name(change->type));
	if (change->from)
		add_path(item, "from", work_dir, change->from);
	if (change->modified)
		cJSON_AddTrueToObject(item, "modified");
	return item;
}

const char *change_kind_name(enum change_kind kind)
{
	static const char *const names[] = {"created", "modified", "removed", "moved"};
	return names[kind];
}

const char *change_type_name(enum change_type type)
{
	static const char *const names[] = {"file", "dir", "link"};
	return names[type];
}

/* ---- the entries ---- */

static struct journal_entry *entry_at(size_t index)
{
	return &journal.entries[journal.start + index];
}

static void entry_free(struct journal_entry *entry)
{
	if (entry->path)
		journal.path_bytes -= strlen(entry->path) + 1;
	if (entry->from)
		journal.path_bytes -= strlen(entry->from) + 1;
	free(entry->path);
	free(entry->from);
	entry->path = entry->from = NULL;
}

/* Collapsed entries keep only their seq until there are more of them than
 * live ones; then they go, so 10,000 writes to a log cost no memory. */
static void compact(void)
{
	size_t dead = journal.count - journal.live;
	if (dead < 1024 || dead < journal.live)
		return;
	size_t kept = 0;
	for (size_t i = 0; i < journal.count; i++)
		if (!entry_at(i)->dead)
			journal.entries[journal.start + kept++] = *entry_at(i);
	journal.count = kept;
}

/* Index of the first entry with a seq above `seq` (count when none). */
static size_t first_after(uint64_t seq)
{
	size_t low = 0, high = journal.count;
	while (low < high) {
		size_t middle = low + (high - low) / 2;
		if (entry_at(middle)->seq <= seq)
			low = middle + 1;
		else
			high = middle;
	}
	return low;
}

static void drop_oldest(void)
{
	struct journal_entry *oldest = entry_at(0);
	if (!oldest->dead) {
		journal.live--;
		if (oldest->kind == CHANGE_MODIFIED) {
			uintptr_t mark =
				(uintptr_t)path_map_get_str(journal.last_modified, oldest->path);
			if (mark == oldest->seq + 1)
				path_map_remove_str(journal.last_modified, oldest->path);
		}
	}
	if (oldest->seq > journal.floor)
		journal.floor = oldest->seq;
	entry_free(oldest);
	journal.start++;
	journal.count--;
}

/* Drops what is past both bounds, or past the hard one. */
static void trim(void)
{
	int64_t now = clock_monotonic_ms();
	while (journal.count > 0) {
		struct journal_entry *oldest = entry_at(0);
		bool over_count = journal.live > journal.keep;
		bool old = now - oldest->at_ms >= journal.keep_ms;
		if (!oldest->dead && !(over_count && old) &&
		    journal.live <= journal.keep * HARD_FACTOR)
			break;
		drop_oldest();
	}
}

static void make_room(void)
{
	if (journal.start > 0 && journal.start >= journal.capacity / 2) {
		memmove(journal.entries, journal.entries + journal.start,
			journal.count * sizeof *journal.entries);
		journal.start = 0;
	}
	if (journal.start + journal.count < journal.capacity)
		return;
	journal.capacity = journal.capacity ? journal.capacity * 2 : 1024;
	journal.entries = xrealloc(journal.entries, journal.capacity * sizeof *journal.entries);
}

/* A write to a path whose latest entry is a write nothing has touched since
 * moves that entry to the end: exact for every cursor, and a log written
 * 10,000 times is one entry. */
static void collapse(const char *path)
{
	uintptr_t mark = (uintptr_t)path_map_remove_str(journal.last_modified, path);
	if (!mark)
		return;
	size_t index = first_after(mark - 2);
	if (index < journal.count && entry_at(index)->seq == mark - 1 && !entry_at(index)->dead) {
		entry_at(index)->dead = true;
		entry_free(entry_at(index));
		journal.live--;
		compact();
	}
}

/* What a new entry does to the collapse's candidates: a move or a folder's
 * removal reaches paths below it, so every candidate goes. */
static void forget_candidates(enum change_kind kind, enum change_type type, const char *path,
			      const char *from)
{
	if (type == CHANGE_DIR && (kind == CHANGE_MOVED || kind == CHANGE_REMOVED)) {
		path_map_clear(journal.last_modified);
		return;
	}
	path_map_remove_str(journal.last_modified, path);
	if (from)
		path_map_remove_str(journal.last_modified, from);
}

void journal_record(enum change_kind kind, enum change_type type, const char *path,
		    const char *from)
{
	if (kind == CHANGE_MODIFIED)
		collapse(path);
	else
		forget_candidates(kind, type, path, from);
	make_room();
	struct journal_entry *entry = &journal.entries[journal.start + journal.count++];
	*entry = (struct journal_entry){
		.seq = ++journal.seq,
		.at_ms = clock_monotonic_ms(),
		.kind = (uint8_t)kind,
		.type = (uint8_t)type,
		.path = xstrdup(path),
		.from = from ? xstrdup(from) : NULL,
	};
	journal.path_bytes += strlen(path) + 1 + (from ? strlen(from) + 1 : 0);
	journal.live++;
	if (kind == CHANGE_MODIFIED)
		path_map_put_str(journal.last_modified, path, (void *)(uintptr_t)(entry->seq + 1));
	trim();
}

void journal_lost(void)
{
	if (journal.complete) /* once per loss, not once per watch refused */
		log_msg(LOG_LEVEL_WARNING,
			"changes: events were lost (queue overflow or watch limit); cursors before "
			"now answer all: true");
	journal.complete = false;
	journal.overflows++;
	path_map_clear(journal.last_modified);
}

void journal_complete(void)
{
	if (!journal.complete)
		journal.floor = journal.seq;
	journal.complete = true;
}

void journal_flush(void)
{
	if (journal.followers)
		event_active(journal.flush, 0, 0);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
	for (struct changes_follower *follower = journal.followers, *next; follower;
	     follower = next) {
		next = follower->next; /* a follower may leave while told */
		follower->changed(follower->arg);
	}
}

/* ---- cursors ---- */

static char *cursor_text(uint64_t seq)
{
	char text[64];
	snprintf(text, sizeof text, "%s-%" PRIu64, journal.id, seq);
	return xstrdup(text);
}

char *changes_cursor(void)
{
	watch_settle();
	return cursor_text(journal.seq);
}

/* 0: malformed; 1: this journal's, in *seq; 2: another journal's. */
static int parse_cursor(const char *cursor, uint64_t *seq)
{
	if (strlen(cursor) < 18 || strlen(cursor) > 17 + 20 || cursor[16] != '-')
		return 0;
	for (int i = 0; i < 16; i++)
		if (!strchr("0123456789abcdef", cursor[i]) || !cursor[i])
			return 0;
	*seq = 0;
	for (const char *digit = cursor + 17; *digit; digit++) {
		if (*digit < '0' || *digit > '9' || *seq > (UINT64_MAX - 9) / 10)
			return 0;
		*seq = *seq * 10 + (uint64_t)(*digit - '0');
	}
	return strncmp(cursor, journal.id, 16) == 0 ? 1 : 2;
}

bool changes_since(const char *cursor, const struct changes_scope *scope, struct change_list *out,
		   enum failure *failure, char *why, size_t why_size)
{
	*out = (struct change_list){0};
	uint64_t seq = 0;
	int parsed = parse_cursor(cursor, &seq);
	if (!parsed) {
		*failure = FAILURE_BAD_REQUEST;
		snprintf(why, why_size,
			 "since must be a cursor boxd gave (from a changes answer), not `%.40s`",
			 cursor);
		return false;
	}
	out->cursor = changes_cursor(); /* settles first */
	/* Another boxd's (a restart, another box), older than what is kept, or
	 * ahead of this journal: only reading everything again is exact. */
	if (parsed == 2 || !journal.complete || seq < journal.floor || seq > journal.seq) {
		out->all = true;
		return true;
	}
	size_t from = first_after(seq);
	if (from < journal.count)
		changes_coalesce(entry_at(from), journal.count - from, scope, journal.work_dir,
				 out);
	return true;
}

void change_list_free(struct change_list *list)
{
	for (size_t i = 0; i < list->count; i++) {
		free(list->items[i].path);
		free(list->items[i].from);
	}
	free(list->items);
	free(list->cursor);
	*list = (struct change_list){0};
}

/* ---- followers, start, stats ---- */

void changes_follow(struct changes_follower *follower)
{
	follower->next = journal.followers;
	journal.followers = follower;
}

void changes_unfollow(struct changes_follower *follower)
{
	for (struct changes_follower **at = &journal.followers; *at; at = &(*at)->next)
		if (*at == follower) {
			*at = follower->next;
			return;
		}
}

void changes_init(struct event_base *base, const struct boxd_config *config)
{
	random_hex(journal.id, 8);
	journal.work_dir = xstrdup(config->work_dir);
	journal.keep = config->changes_keep;
	journal.keep_ms = (int64_t)config->changes_keep_sec * 1000;
	journal.last_modified = path_map_new();
	journal.flush = event_new(base, -1, 0, on_flush, NULL);
	watch_start(base, config->work_dir);
}

void changes_stop(void)
{
	if (!journal.work_dir)
		return;
	watch_stop();
	while (journal.count)
		drop_oldest();
	free(journal.entries);
	event_free(journal.flush);
	path_map_free(journal.last_modified);
	free(journal.work_dir);
	memset(&journal, 0, sizeof journal);
}

void changes_stats(struct changes_stats *stats)
{
	*stats = (struct changes_stats){
		.entries = journal.live,
		.journal_bytes = journal.capacity * sizeof *journal.entries + journal.path_bytes +
				 path_map_bytes(journal.last_modified),
		.seq = journal.seq,
		.floor = journal.floor,
		.complete = journal.complete,
		.overflows = journal.overflows,
	};
	watch_stats(stats);
}
