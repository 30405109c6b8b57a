/* files-internal.h: what files.c, files-put.c and files-tree.c share:
 * where a path leads (a folder fd and a name in it), the box user's
 * identity, and the stat of one entry as JSON. */
#ifndef BOXD_FILES_INTERNAL_H
#define BOXD_FILES_INTERNAL_H

#include <stdbool.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "files.h"

struct event_base;

/* Where a path leads: the folder that holds the entry, opened beneath the
 * work dir, and the entry's name in it ("." for the work dir itself). */
struct files_place {
	int parent_fd;
	char *name;
	char *relative; /* relative to the work dir, "" for the work dir itself */
	char *shown;    /* the absolute path, for answers and sentences */
};

/* Who writes: the box user's file-system identity, looked up on the loop
 * (the user database's cache is the loop's) and then taken on whichever
 * thread writes. */
struct files_identity {
	bool act; /* false: boxd is not root, or the box user is root */
	uid_t uid;
	gid_t gid;
	int group_count;
	gid_t groups[64];
};
/* The box user's identity now; false with a failure when the user does
 * not exist. Loop thread. */
bool files_identity_get(struct files_identity *identity, struct files_error *error);
/* Takes `identity` on this thread (true) or gives boxd's own back (false),
 * with raw system calls: glibc would change every thread's groups. */
void files_identity_take(const struct files_identity *identity, bool take);

/* Resolves `path` (see files.h) into `place`, making the missing folders on
 * the way with `make_parents`. A write passes the identity it has taken
 * (`as`): the work dir itself is opened as boxd, the rest as the user.
 * False with a failure. */
bool files_place_resolve(const char *path, bool make_parents, const struct files_identity *as,
			 struct files_place *place, struct files_error *error);
void files_place_free(struct files_place *place);
/* The place is the work dir itself: a write refuses it. */
bool files_place_is_work_dir(const struct files_place *place);

/* Sets `error` for an errno met on `place` while doing `what` ("write",
 * "remove", ...): not_found, conflict, forbidden, disk_full or internal. */
void files_errno(struct files_error *error, int code, const char *what, const char *shown);

/* The stat answer of `name` in `dir_fd` (not followed), shown as `shown`;
 * NULL with errno when lstat fails. */
cJSON *files_entry_json(int dir_fd, const char *name, const char *shown);

/* The work dir, and the loop given at files_init (files-tree.c keeps it):
 * where offloaded work (a removal, a write's fsync) ends. */
const char *files_work_dir(void);
void files_tree_init(struct event_base *base);
struct event_base *files_loop(void);

/* `relative` shown as an absolute path under the work dir; caller frees. */
char *files_shown(const char *relative);

#endif
