#include "request-ids.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "io.h"
#include "log.h"
#include "xalloc.h"

/* A doubly linked list, oldest first. Lookups are linear: a few hundred
 * short ids compare in microseconds, far below an HTTP round trip. */
static struct request_id_entry *oldest, *newest;
static size_t entry_count;
static size_t kept_bytes; /* answer bodies, in the store or in memory */
static char *store_dir;   /* NULL: memory only */

/* ---- the store: one file per id ----
 *
 * "boxd-request-id 1\n" TARGET "\n" STATE "\n" STATUS "\n" STARTED_AT "\n"
 * FINISHED_AT "\n" CONTENT_TYPE "\n" RESOURCE "\n" then the body's bytes.
 * STATE is pending, done or dropped; RESOURCE is "-" for none. Written to a
 * temporary name and renamed, so a crash leaves the old record or the new.
 * The body is the answer as sent: already masked. */

#define STORE_MAGIC "boxd-request-id 1"

static char *store_path(const char *id)
{
	return xasprintf("%s/%s", store_dir, id);
}

static const char *state_name(const struct request_id_entry *entry)
{
	return !entry->done ? "pending" : entry->body_dropped ? "dropped" : "done";
}

static bool store_write(const struct request_id_entry *entry, const void *body, size_t length)
{
	if (!store_dir)
		return false;
	char *path = store_path(entry->id);
	int fd = io_replace_open(path, 0600);
	bool ok = fd >= 0;
	if (ok) {
		int64_t finished_at =
			entry->done ? clock_now_ms() - (clock_monotonic_ms() - entry->finished_ms)
				    : 0;
		ok = dprintf(fd, "%s\n%s\n%s\n%d\n%lld\n%lld\n%s\n%s\n", STORE_MAGIC, entry->target,
			     state_name(entry), entry->status, (long long)entry->started_at,
			     (long long)finished_at,
			     entry->content_type ? entry->content_type : "-",
			     entry->resource ? entry->resource : "-") > 0 &&
		     (!length || io_write_all(fd, body, length));
		ok = io_replace_commit(fd, path, ok, 0);
	}
	if (!ok)
		log_msg(LOG_LEVEL_WARNING,
			"cannot keep X-Request-Id %s in %s (%s): a repeat after a restart of boxd "
			"would not find it",
			entry->id, store_dir, strerror(errno));
	free(path);
	return ok;
}

static void store_remove(const struct request_id_entry *entry)
{
	if (!store_dir)
		return;
	char *path = store_path(entry->id);
	unlink(path);
	free(path);
}

/* ---- the list ---- */

bool request_ids_valid(const char *id)
{
	size_t length = strlen(id);
	if (length < 1 || length > 64)
		return false;
	return strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") ==
	       length;
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
	if (entry == oldest)
		oldest = entry->newer;
	else
		entry->older->newer = entry->newer;
	if (entry == newest)
		newest = entry->older;
	else
		entry->newer->older = entry->older;
	entry_count--;
	if (entry->done && !entry->body_dropped)
		kept_bytes -= entry->body_length;
}

static void free_entry(struct request_id_entry *entry)
{
	free(entry->id);
	free(entry->target);
	free(entry->resource);
	free(entry->content_type);
	free(entry->body);
	free(entry);
}

static void forget_entry(struct request_id_entry *entry)
{
	unlink_entry(entry);
	store_remove(entry);
	free_entry(entry);
}

static bool may_forget(const struct request_id_entry *entry, int64_t now_ms)
{
	if (!entry->done)
		return false;
	if (entry_count > REQUEST_IDS_HARD_LIMIT)
		return true;
	return entry_count > REQUEST_IDS_KEEP_COUNT &&
	       now_ms - entry->finished_ms >= REQUEST_IDS_KEEP_MS;
}

static void forget_old(int64_t now_ms)
{
	struct request_id_entry *entry = oldest;
	while (entry && entry_count > REQUEST_IDS_KEEP_COUNT) {
		struct request_id_entry *next = entry->newer;
		if (may_forget(entry, now_ms)) {
			forget_entry(entry);
		} else if (entry_count <= REQUEST_IDS_HARD_LIMIT) {
			/* Entries are in start order: later ones are younger. */
			if (entry->done)
				break;
		}
		entry = next;
	}
}

/* Past the byte bound the oldest answers lose their bodies (ids and
 * targets stay, so a repeat is still refused, never run again). */
static void drop_old_bodies(void)
{
	for (struct request_id_entry *entry = oldest; entry && kept_bytes > REQUEST_IDS_KEEP_BYTES;
	     entry = entry->newer) {
		if (!entry->done || entry->body_dropped)
			continue;
		kept_bytes -= entry->body_length;
		entry->body_dropped = true;
		free(entry->body);
		entry->body = NULL;
		store_write(entry, NULL, 0);
	}
}

static void append_entry(struct request_id_entry *entry)
{
	entry->older = newest;
	if (newest)
		newest->newer = entry;
	else
		oldest = entry;
	newest = entry;
	entry_count++;
	if (entry->done && !entry->body_dropped)
		kept_bytes += entry->body_length;
}

struct request_id_entry *request_ids_begin(const char *id, const char *target, int64_t now_ms)
{
	forget_old(now_ms);
	struct request_id_entry *entry = xcalloc(1, sizeof *entry);
	entry->id = xstrdup(id);
	entry->target = xstrdup(target);
	entry->started_at = clock_now_ms();
	append_entry(entry);
	store_write(entry, NULL, 0);
	return entry;
}

void request_ids_bind(struct request_id_entry *entry, const char *resource)
{
	free(entry->resource);
	entry->resource = xstrdup(resource);
	store_write(entry, NULL, 0);
}

void request_ids_restart(struct request_id_entry *entry)
{
	entry->orphaned = false;
	free(entry->resource);
	entry->resource = NULL;
	store_write(entry, NULL, 0);
}

void request_ids_finish(struct request_id_entry *entry, int status, const char *content_type,
			const void *body, size_t body_length, int64_t now_ms)
{
	entry->done = true;
	entry->orphaned = false;
	entry->finished_ms = now_ms;
	entry->status = status;
	entry->content_type = xstrdup(content_type ? content_type : "application/json");
	entry->body_length = body_length;
	kept_bytes += body_length;
	/* In the store, the body needs no copy in boxd's memory. */
	if (!store_write(entry, body, body_length)) {
		entry->body = xmalloc(body_length + 1);
		memcpy(entry->body, body, body_length);
		entry->body[body_length] = '\0';
	}
	drop_old_bodies();
}

char *request_ids_body(const struct request_id_entry *entry, size_t *length)
{
	*length = 0;
	if (!entry->done || entry->body_dropped)
		return NULL;
	char *body = xmalloc(entry->body_length + 1);
	if (entry->body) {
		memcpy(body, entry->body, entry->body_length);
	} else {
		char *path = store_path(entry->id);
		FILE *file = fopen(path, "re");
		free(path);
		bool ok = file != NULL;
		/* The body is the file's tail, after the header's eight lines. */
		if (ok && fseeko(file, -(off_t)entry->body_length, SEEK_END) != 0)
			ok = entry->body_length == 0;
		if (ok && entry->body_length)
			ok = fread(body, 1, entry->body_length, file) == entry->body_length;
		if (file)
			fclose(file);
		if (!ok) {
			free(body);
			return NULL;
		}
	}
	body[entry->body_length] = '\0';
	*length = entry->body_length;
	return body;
}

void request_ids_abandon(struct request_id_entry *entry)
{
	forget_entry(entry);
}

size_t request_ids_count(void)
{
	return entry_count;
}

void request_ids_clear(void)
{
	struct request_id_entry *entry = oldest;
	while (entry) {
		struct request_id_entry *next = entry->newer;
		free_entry(entry);
		entry = next;
	}
	oldest = newest = NULL;
	entry_count = 0;
	kept_bytes = 0;
}

/* ---- loading what an earlier boxd kept ---- */

static char *read_line(FILE *file)
{
	char *line = NULL;
	size_t size = 0;
	ssize_t n = getline(&line, &size, file);
	if (n <= 0) {
		free(line);
		return NULL;
	}
	if (line[n - 1] == '\n')
		line[n - 1] = '\0';
	return line;
}

/* Parses one record; NULL (and the file is removed) when it is not one. */
static struct request_id_entry *load_entry(const char *id, int64_t now_ms)
{
	char *path = store_path(id);
	FILE *file = fopen(path, "re");
	char *lines[8] = {0};
	int count = 0;
	while (file && count < 8 && (lines[count] = read_line(file)))
		count++;
	struct request_id_entry *entry = NULL;
	struct stat info;
	if (count == 8 && strcmp(lines[0], STORE_MAGIC) == 0 && fstat(fileno(file), &info) == 0) {
		entry = xcalloc(1, sizeof *entry);
		entry->id = xstrdup(id);
		entry->target = lines[1];
		lines[1] = NULL;
		entry->done = strcmp(lines[2], "pending") != 0;
		entry->body_dropped = strcmp(lines[2], "dropped") == 0;
		entry->orphaned = !entry->done;
		entry->status = atoi(lines[3]);
		entry->started_at = atoll(lines[4]);
		int64_t age = clock_now_ms() - atoll(lines[5]);
		entry->finished_ms = now_ms - (age > 0 ? age : 0);
		if (entry->done)
			entry->content_type = xstrdup(lines[6]);
		if (strcmp(lines[7], "-") != 0)
			entry->resource = xstrdup(lines[7]);
		off_t header = ftello(file);
		entry->body_length = entry->done && !entry->body_dropped && info.st_size > header
					     ? (size_t)(info.st_size - header)
					     : 0;
	}
	for (int i = 0; i < count; i++)
		free(lines[i]);
	if (file)
		fclose(file);
	if (!entry)
		unlink(path);
	free(path);
	return entry;
}

static int by_start(const void *a, const void *b)
{
	const struct request_id_entry *x = *(struct request_id_entry *const *)a;
	const struct request_id_entry *y = *(struct request_id_entry *const *)b;
	return (x->started_at > y->started_at) - (x->started_at < y->started_at);
}

bool request_ids_open(const char *dir, int64_t now_ms)
{
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		log_msg(LOG_LEVEL_WARNING,
			"cannot make %s (%s): X-Request-Id memory will not survive a restart", dir,
			strerror(errno));
		return false;
	}
	DIR *directory = opendir(dir);
	if (!directory) {
		log_msg(LOG_LEVEL_WARNING,
			"cannot read %s (%s): X-Request-Id memory will not survive a restart", dir,
			strerror(errno));
		return false;
	}
	free(store_dir);
	store_dir = xstrdup(dir);
	struct request_id_entry **loaded = NULL;
	size_t count = 0;
	struct dirent *item;
	while ((item = readdir(directory))) {
		size_t name_length = strlen(item->d_name);
		if (name_length > 4 && !strcmp(item->d_name + name_length - 4, ".tmp")) {
			unlinkat(dirfd(directory), item->d_name, 0); /* a write a crash cut */
			continue;
		}
		if (item->d_name[0] == '.')
			continue;
		struct request_id_entry *entry =
			request_ids_valid(item->d_name) ? load_entry(item->d_name, now_ms) : NULL;
		if (!entry)
			continue;
		loaded = xrealloc(loaded, (count + 1) * sizeof *loaded);
		loaded[count++] = entry;
	}
	closedir(directory);
	if (count)
		qsort(loaded, count, sizeof *loaded, by_start);
	for (size_t i = 0; i < count; i++)
		append_entry(loaded[i]);
	free(loaded);
	forget_old(now_ms);
	drop_old_bodies();
	if (count)
		log_msg(LOG_LEVEL_INFO, "kept %zu X-Request-Id answers from before this start",
			count);
	return true;
}
