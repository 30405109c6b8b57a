#include "request-ids.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* A doubly linked list, oldest first. Lookups are linear: a few hundred
 * short ids compare in microseconds, far below an HTTP round trip. */
static struct request_id_entry *oldest, *newest;
static size_t entry_count;

bool request_ids_valid(const char *id)
{
	size_t length = strlen(id);
	if (length < 1 || length > 64)
		return false;
	return strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == length;
}

struct request_id_entry *request_ids_find(const char *id)
{
	for (struct request_id_entry *entry = newest; entry; entry = entry->older) {
		if (strcmp(entry->id, id) == 0)
			return entry;
	}
	return NULL;
}

static void unlink_entry(struct request_id_entry *entry)
{
	if (entry->older)
		entry->older->newer = entry->newer;
	else
		oldest = entry->newer;
	if (entry->newer)
		entry->newer->older = entry->older;
	else
		newest = entry->older;
	entry_count--;
}

static void free_entry(struct request_id_entry *entry)
{
	free(entry->id);
	free(entry->target);
	free(entry->content_type);
	free(entry->body);
	free(entry);
}

static bool may_forget(const struct request_id_entry *entry, int64_t now_ms)
{
	if (!entry->done)
		return false;
	if (entry_count > REQUEST_IDS_HARD_LIMIT)
		return true;
	return entry_count > REQUEST_IDS_KEEP_COUNT && now_ms - entry->finished_ms >= REQUEST_IDS_KEEP_MS;
}

static void forget_old(int64_t now_ms)
{
	struct request_id_entry *entry = oldest;
	while (entry && entry_count > REQUEST_IDS_KEEP_COUNT) {
		struct request_id_entry *next = entry->newer;
		if (may_forget(entry, now_ms)) {
			unlink_entry(entry);
			free_entry(entry);
		} else if (entry_count <= REQUEST_IDS_HARD_LIMIT) {
			/* Entries are in start order: later ones are younger. */
			if (entry->done)
				break;
		}
		entry = next;
	}
}

struct request_id_entry *request_ids_begin(const char *id, const char *target, int64_t now_ms)
{
	forget_old(now_ms);
	struct request_id_entry *entry = xcalloc(1, sizeof *entry);
	entry->id = xstrdup(id);
	entry->target = xstrdup(target);
	entry->older = newest;
	if (newest)
		newest->newer = entry;
	else
		oldest = entry;
	newest = entry;
	entry_count++;
	return entry;
}

void request_ids_finish(struct request_id_entry *entry, int status, const char *content_type,
			const void *body, size_t body_length, int64_t now_ms)
{
	entry->done = true;
	entry->finished_ms = now_ms;
	entry->status = status;
	entry->content_type = xstrdup(content_type ? content_type : "application/json");
	entry->body = xmalloc(body_length + 1);
	memcpy(entry->body, body, body_length);
	entry->body[body_length] = '\0';
	entry->body_length = body_length;
}

void request_ids_abandon(struct request_id_entry *entry)
{
	unlink_entry(entry);
	free_entry(entry);
}

size_t request_ids_count(void)
{
	return entry_count;
}

void request_ids_clear(void)
{
	while (oldest) {
		struct request_id_entry *entry = oldest;
		unlink_entry(entry);
		free_entry(entry);
	}
}
