/* users.c: the user database, looked up once per user while it is
 * unchanged (users.h). */
#include "users.h"

#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "xalloc.h"

#define USERS_KEPT 8

struct kept {
	char given[64];
	int64_t at_ms;
	struct user_entry entry;
};

static struct kept kept[USERS_KEPT];
static size_t kept_count;

/* What says the files changed: a rename (useradd, vipw) gives another
 * inode, an edit in place other times and often another size. */
struct files_mark {
	ino_t inode[2];
	off_t size[2];
	struct timespec modified[2], changed[2];
	bool present[2];
};

static struct files_mark mark;

static struct files_mark files_mark_now(void)
{
	static const char *const files[2] = {"/etc/passwd", "/etc/group"};
	struct files_mark now;
	memset(&now, 0, sizeof now);
	for (int i = 0; i < 2; i++) {
		struct stat info;
		now.present[i] = stat(files[i], &info) == 0;
		if (!now.present[i])
			continue;
		now.inode[i] = info.st_ino;
		now.size[i] = info.st_size;
		now.modified[i] = info.st_mtim;
		now.changed[i] = info.st_ctim;
	}
	return now;
}

static bool same_time(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool files_mark_equal(const struct files_mark *a, const struct files_mark *b)
{
	for (int i = 0; i < 2; i++)
		if (a->present[i] != b->present[i] || a->inode[i] != b->inode[i] ||
		    a->size[i] != b->size[i] || !same_time(a->modified[i], b->modified[i]) ||
		    !same_time(a->changed[i], b->changed[i]))
			return false;
	return true;
}

static void entry_free(struct user_entry *entry)
{
	free(entry->name);
	free(entry->home);
	free(entry->groups);
	memset(entry, 0, sizeof *entry);
}

static void forget_all(void)
{
	for (size_t i = 0; i < kept_count; i++)
		entry_free(&kept[i].entry);
	kept_count = 0;
}

/* Every group, however many: getgrouplist says how many when the room is
 * short. */
static void lookup_groups(struct user_entry *entry)
{
	int count = 32;
	entry->groups = xmalloc((size_t)count * sizeof *entry->groups);
	for (int tries = 0; tries < 4; tries++) {
		int room = count;
		if (getgrouplist(entry->name, entry->gid, entry->groups, &count) >= 0) {
			entry->group_count = (size_t)count;
			return;
		}
		if (count <= room)
			break;
		entry->groups = xrealloc(entry->groups, (size_t)count * sizeof *entry->groups);
	}
	entry->group_count = 0;
}

static bool lookup(const char *given, struct user_entry *entry)
{
	char *end;
	unsigned long uid = strtoul(given, &end, 10);
	bool numeric = *given && !*end;
	struct passwd *pw = numeric ? getpwuid((uid_t)uid) : getpwnam(given);
	if (!pw && numeric) {
		/* A uid without an entry: that uid, the same gid, no groups. */
		*entry = (struct user_entry){.name = xstrdup(given),
					     .uid = (uid_t)uid,
					     .gid = (gid_t)uid,
					     .home = xstrdup("/")};
		return true;
	}
	if (!pw)
		return false;
	entry->name = xstrdup(pw->pw_name);
	entry->uid = pw->pw_uid;
	entry->gid = pw->pw_gid;
	entry->home = xstrdup(pw->pw_dir ? pw->pw_dir : "/");
	lookup_groups(entry);
	return true;
}

/* The slot for a new entry: a free one, else the oldest. */
static struct kept *slot(void)
{
	if (kept_count < USERS_KEPT)
		return &kept[kept_count++];
	struct kept *oldest = &kept[0];
	for (size_t i = 1; i < kept_count; i++)
		if (kept[i].at_ms < oldest->at_ms)
			oldest = &kept[i];
	entry_free(&oldest->entry);
	return oldest;
}

const struct user_entry *users_find(const char *given)
{
	if (strlen(given) >= sizeof kept[0].given)
		return NULL;
	struct files_mark now = files_mark_now();
	if (!files_mark_equal(&now, &mark)) {
		forget_all();
		mark = now;
	}
	int64_t now_ms = clock_monotonic_ms();
	for (size_t i = 0; i < kept_count; i++) {
		if (strcmp(kept[i].given, given))
			continue;
		if (now_ms - kept[i].at_ms <= USERS_KEEP_MS)
			return &kept[i].entry;
		entry_free(&kept[i].entry); /* stale: looked up again below */
		kept[i] = kept[--kept_count];
		break;
	}
	struct user_entry entry = {0};
	if (!lookup(given, &entry))
		return NULL;
	struct kept *into = slot();
	snprintf(into->given, sizeof into->given, "%s", given);
	into->at_ms = now_ms;
	into->entry = entry;
	return &into->entry;
}
