/* changes-coalesce.c: one entry per path from a run of journal entries
 * (docs/changes.md, "Coalescing", has the rules and why each is exact).
 *
 * Entries are applied in order to a table of what the answer will say, keyed
 * by path. A folder's move carries what the table says of its subtree to the
 * new place (and after the move in the answer's order: a client applying the
 * answer in order moves the folder first); a folder's removal swallows what
 * the table says below it. Then the scope: a move that crosses the scope's
 * edge is a removal or a creation (a folder moved in is listed from the
 * disk), and what lies in a folder created since the cursor is created. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "changes-internal.h"
#include "path-map.h"
#include "xalloc.h"

struct item {
	enum change_kind kind;
	enum change_type type;
	bool modified, alive, listed;
	char *path, *from;
	uint64_t order, minor;
};

struct table {
	struct item *items;
	size_t count, capacity;
	struct path_map *by_path; /* path now -> index + 1 of its item */
	struct path_map *removed; /* path at the cursor -> index + 1 of its removal */
	uint64_t minor;
};

/* ---- the table ---- */

static bool under(const char *path, const char *folder)
{
	size_t length = strlen(folder);
	if (length == 0)
		return *path != '\0';
	return strncmp(path, folder, length) == 0 && path[length] == '/';
}

static bool at_or_under(const char *path, const char *folder)
{
	return strcmp(path, folder) == 0 || under(path, folder);
}

static struct item *lookup(struct table *table, const char *path)
{
	uintptr_t at = (uintptr_t)path_map_get_str(table->by_path, path);
	return at ? &table->items[at - 1] : NULL;
}

static size_t add(struct table *table, enum change_kind kind, enum change_type type,
		  const char *path, const char *from, uint64_t order)
{
	if (table->count == table->capacity) {
		table->capacity = table->capacity ? table->capacity * 2 : 64;
		table->items = xrealloc(table->items, table->capacity * sizeof *table->items);
	}
	size_t index = table->count++;
	table->items[index] = (struct item){
		.kind = kind,
		.type = type,
		.alive = true,
		.path = xstrdup(path),
		.from = from ? xstrdup(from) : NULL,
		.order = order,
	};
	if (kind != CHANGE_REMOVED)
		path_map_put_str(table->by_path, path, (void *)(uintptr_t)(index + 1));
	else
		path_map_put_str(table->removed, path, (void *)(uintptr_t)(index + 1));
	return index;
}

static void kill(struct table *table, struct item *item)
{
	struct path_map *map = item->kind == CHANGE_REMOVED ? table->removed : table->by_path;
	uintptr_t at = (uintptr_t)path_map_get_str(map, item->path);
	if (at && &table->items[at - 1] == item)
		path_map_remove_str(map, item->path);
	item->alive = false;
}

/* Where what is now at `path` was at the cursor: a path, or NULL when it
 * (or a folder above it) was created since. The table's moves and
 * creations of the path and the folders above it tell. */
static char *origin(struct table *table, const char *path)
{
	char *prefix = xstrdup(path);
	for (;;) {
		struct item *item = lookup(table, prefix);
		if (item && item->kind == CHANGE_CREATED) {
			free(prefix);
			return NULL;
		}
		if (item && item->kind == CHANGE_MOVED) {
			const char *rest = path + strlen(prefix);
			char *was = xasprintf("%s%s", item->from, rest);
			free(prefix);
			return was;
		}
		char *slash = strrchr(prefix, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
	free(prefix);
	return xstrdup(path);
}

/* The thing at `was` (a path as of the cursor) is gone. */
static void gone(struct table *table, const char *was, enum change_type type, uint64_t order)
{
	if (!was)
		return;
	struct item *known = NULL;
	uintptr_t at = (uintptr_t)path_map_get_str(table->removed, was);
	if (at)
		known = &table->items[at - 1];
	if (known) {
		if (type == CHANGE_DIR)
			known->type = CHANGE_DIR;
		return;
	}
	add(table, CHANGE_REMOVED, type, was, NULL, order);
}

/* What the table says is now at or below `path` is swallowed (the path's
 * removal, or something put in its place): what was moved there from
 * elsewhere is gone from where it was. */
static void swallow(struct table *table, const char *path, uint64_t order)
{
	for (size_t i = 0; i < table->count; i++) {
		struct item *item = &table->items[i];
		if (!item->alive || item->kind == CHANGE_REMOVED || !at_or_under(item->path, path))
			continue;
		kill(table, item);
		if (item->kind == CHANGE_MOVED) {
			char *from = xstrdup(item->from);
			gone(table, from, item->type, order);
			free(from);
		}
	}
}

/* ---- applying entries ---- */

static void apply_created(struct table *table, const struct journal_entry *entry)
{
	struct item *item = lookup(table, entry->path);
	if (item) {
		if (item->kind == CHANGE_MOVED)
			item->modified = true;
		item->type = entry->type;
		return;
	}
	char *was = origin(table, entry->path);
	uintptr_t removed = was ? (uintptr_t)path_map_get_str(table->removed, was) : 0;
	enum change_kind kind = CHANGE_CREATED;
	if (removed && strcmp(was, entry->path) == 0 &&
	    table->items[removed - 1].type != CHANGE_DIR && entry->type != CHANGE_DIR) {
		/* A file removed and made again: modified, nothing removed. */
		kill(table, &table->items[removed - 1]);
		kind = CHANGE_MODIFIED;
	}
	add(table, kind, entry->type, entry->path, NULL, entry->seq);
	free(was);
}

static void apply_modified(struct table *table, const struct journal_entry *entry)
{
	struct item *item = lookup(table, entry->path);
	if (!item) {
		add(table, CHANGE_MODIFIED, entry->type, entry->path, NULL, entry->seq);
		return;
	}
	if (item->kind == CHANGE_MOVED)
		item->modified = true;
	item->type = entry->type;
}

static void apply_removed(struct table *table, const struct journal_entry *entry)
{
	char *was = origin(table, entry->path);
	swallow(table, entry->path, entry->seq);
	/* Known as the cursor's thing at `was` only when nothing was put there. */
	gone(table, was, entry->type, entry->seq);
	free(was);
}

/* What the table says below `from` now lies below `to`. */
static void carry_subtree(struct table *table, const char *from, const char *to, uint64_t seq)
{
	size_t from_length = strlen(from);
	for (size_t i = 0; i < table->count; i++) {
		struct item *item = &table->items[i];
		if (!item->alive || item->kind == CHANGE_REMOVED || !under(item->path, from))
			continue;
		char *moved = xasprintf("%s%s", to, item->path + from_length);
		kill(table, item);
		item->alive = true;
		free(item->path);
		item->path = moved;
		item->order = seq;
		item->minor = ++table->minor;
		path_map_put_str(table->by_path, moved, (void *)(uintptr_t)(i + 1));
	}
}

static void apply_moved(struct table *table, const struct journal_entry *entry)
{
	const char *to = entry->path, *from = entry->from;
	if (strcmp(to, from) == 0)
		return;
	/* What the source is, as of the cursor. */
	struct item *source = lookup(table, from);
	enum change_kind kind = CHANGE_MOVED;
	bool modified = false;
	char *was;
	if (source && source->kind == CHANGE_CREATED) {
		kind = CHANGE_CREATED;
		was = NULL;
	} else if (source && source->kind == CHANGE_MOVED) {
		was = xstrdup(source->from);
		modified = source->modified;
	} else {
		was = origin(table, from);
		modified = source != NULL; /* a modified thing */
		if (!was)
			kind = CHANGE_CREATED;
	}
	if (source)
		kill(table, source);
	/* The target's old content is replaced; then the source's subtree is there. */
	swallow(table, to, entry->seq);
	if (entry->type == CHANGE_DIR)
		carry_subtree(table, from, to, entry->seq);
	char *here = origin(table, to);
	if (kind == CHANGE_MOVED && here && strcmp(here, was) == 0) {
		/* Back where it was at the cursor. */
		if (modified)
			add(table, CHANGE_MODIFIED, entry->type, to, NULL, entry->seq);
	} else {
		size_t index = add(table, kind, entry->type, to, was, entry->seq);
		table->items[index].modified = kind == CHANGE_MOVED && modified;
	}
	free(here);
	free(was);
}

/* ---- the scope, and the answer ---- */

bool changes_in_scope(const char *path, const struct changes_scope *scope)
{
	if (*scope->under && !under(path, scope->under) && strcmp(path, scope->under) != 0)
		return false;
	if (scope->internals)
		return true;
	if (strcmp(path, ".sbx") == 0 || strncmp(path, ".sbx/", 5) == 0)
		return false;
	/* `.git` itself is shown (a repository made or removed), not what is in it. */
	for (const char *at = path; (at = strstr(at, ".git/")) != NULL; at++)
		if (at == path || at[-1] == '/')
			return false;
	return true;
}

static int by_order(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	return x->minor < y->minor ? -1 : x->minor > y->minor;
}

static void emit(struct change_list *out, enum change_kind kind, enum change_type type,
		 bool modified, const char *path, const char *from)
{
	out->items = xrealloc(out->items, (out->count + 1) * sizeof *out->items);
	out->items[out->count++] = (struct change){
		.kind = kind,
		.type = type,
		.modified = modified,
		.path = xstrdup(path),
		.from = from ? xstrdup(from) : NULL,
	};
}

/* A move across the scope's edge is a creation or a removal. */
static void fit_scope(struct item *item, const struct changes_scope *scope)
{
	bool in = changes_in_scope(item->path, scope);
	if (item->kind != CHANGE_MOVED) {
		item->alive = in;
		return;
	}
	bool source_in = changes_in_scope(item->from, scope);
	if (in && !source_in) {
		item->kind = CHANGE_CREATED;
		item->listed = item->type == CHANGE_DIR;
	} else if (!in && source_in) {
		item->kind = CHANGE_REMOVED;
		free(item->path);
		item->path = item->from;
		item->from = NULL;
	} else {
		item->alive = in;
	}
	if (item->kind != CHANGE_MOVED)
		item->modified = false;
}

/* Whether a folder above `path` was created since the cursor. */
static bool in_created_folder(const char *path, struct path_map *created)
{
	char *copy = xstrdup(path);
	bool found = false;
	for (char *slash; !found && (slash = strrchr(copy, '/')) != NULL;) {
		*slash = '\0';
		found = path_map_get_str(created, copy) != NULL;
	}
	free(copy);
	return found;
}

/* Lists what a folder moved into the scope holds now, as created. */
static void list_folder(const char *work_dir, const char *folder, const struct changes_scope *scope,
			struct path_map *named, struct change_list *out)
{
	char *full = xasprintf("%s/%s", work_dir, folder);
	DIR *dir = opendir(full);
	free(full);
	if (!dir)
		return;
	for (struct dirent *child; (child = readdir(dir)) != NULL;) {
		if (!strcmp(child->d_name, ".") || !strcmp(child->d_name, ".."))
			continue;
		char *path = xasprintf("%s/%s", folder, child->d_name);
		enum change_type type = child->d_type == DT_DIR   ? CHANGE_DIR
					: child->d_type == DT_LNK ? CHANGE_LINK
								  : CHANGE_FILE;
		if (changes_in_scope(path, scope) && !path_map_get_str(named, path)) {
			emit(out, CHANGE_CREATED, type, false, path, NULL);
			if (type == CHANGE_DIR)
				list_folder(work_dir, path, scope, named, out);
		}
		free(path);
	}
	closedir(dir);
}

static void answer(struct table *table, const struct changes_scope *scope, const char *work_dir,
		   struct change_list *out)
{
	struct path_map *created = path_map_new(), *named = path_map_new();
	for (size_t i = 0; i < table->count; i++)
		if (table->items[i].alive)
			fit_scope(&table->items[i], scope);
	for (size_t i = 0; i < table->count; i++) {
		struct item *item = &table->items[i];
		if (item->alive && item->kind == CHANGE_CREATED && item->type == CHANGE_DIR)
			path_map_put_str(created, item->path, item);
		if (item->alive)
			path_map_put_str(named, item->path, item);
	}
	for (size_t i = 0; i < table->count; i++) {
		struct item *item = &table->items[i];
		if (!item->alive || !in_created_folder(item->path, created))
			continue;
		if (item->kind == CHANGE_REMOVED)
			item->alive = false; /* never existed for the cursor's holder */
		else if (item->kind == CHANGE_MODIFIED)
			item->kind = CHANGE_CREATED;
	}
	for (size_t i = 0; i < table->count; i++) {
		struct item *item = &table->items[i];
		if (!item->alive)
			continue;
		emit(out, item->kind, item->type, item->modified, item->path, item->from);
		if (item->listed)
			list_folder(work_dir, item->path, scope, named, out);
	}
	path_map_free(created);
	path_map_free(named);
}

void changes_coalesce(const struct journal_entry *entries, size_t count,
		      const struct changes_scope *scope, const char *work_dir,
		      struct change_list *out)
{
	struct table table = {.by_path = path_map_new(), .removed = path_map_new()};
	for (size_t i = 0; i < count; i++) {
		const struct journal_entry *entry = &entries[i];
		if (entry->dead)
			continue;
		switch ((enum change_kind)entry->kind) {
		case CHANGE_CREATED: apply_created(&table, entry); break;
		case CHANGE_MODIFIED: apply_modified(&table, entry); break;
		case CHANGE_REMOVED: apply_removed(&table, entry); break;
		case CHANGE_MOVED: apply_moved(&table, entry); break;
		}
	}
	if (table.count > 1)
		qsort(table.items, table.count, sizeof *table.items, by_order);
	answer(&table, scope, work_dir, out);
	for (size_t i = 0; i < table.count; i++) {
		free(table.items[i].path);
		free(table.items[i].from);
	}
	free(table.items);
	path_map_free(table.by_path);
	path_map_free(table.removed);
}
