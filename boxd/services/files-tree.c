/* files-tree.c: the calls of files.h that walk a folder: a listing (on the
 * loop: at most FILES_LIST_LIMIT lstat calls) and a removal (on a thread of
 * its own: a node_modules of 100,000 files takes seconds, which the loop
 * must not wait). Neither follows a link inside the folder it walks: each
 * folder is opened with O_NOFOLLOW from its parent's fd, and a link is
 * listed or removed as the link it is. */
#include "files-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "offload.h"
#include "steps.h"
#include "work-path.h"
#include "xalloc.h"

static struct event_base *loop; /* given at files_init */

void files_tree_init(struct event_base *base)
{
	loop = base;
}

struct event_base *files_loop(void)
{
	return loop;
}

/* ---- listing ---- */

struct listing {
	cJSON *entries;
	int count;
	bool truncated;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in the folder open on `fd` (not "." or ".."), sorted by their
 * bytes; *count of them. NULL (errno set) when it cannot be read. */
static char **sorted_names(int fd, size_t *count)
{
	*count = 0;
	int own = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = own < 0 ? NULL : fdopendir(own);
	if (!dir) {
		if (own >= 0)
			close(own);
		return NULL;
	}
	size_t used = 0, size = 64;
	char **names = xmalloc(size * sizeof *names);
	struct dirent *entry;
	while ((entry = readdir(dir))) {
		if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
			continue;
		if (used == size) {
			size *= 2;
			names = xrealloc(names, size * sizeof *names);
		}
		names[used++] = xstrdup(entry->d_name);
	}
	closedir(dir);
	if (used)
		qsort(names, used, sizeof *names, by_name);
	*count = used;
	return names;
}

static void free_names(char **names, size_t count)
{
	for (size_t i = 0; names && i < count; i++)
		free(names[i]);
	free(names);
}

/* Lists the folder open on `fd` (shown as `shown`) and, `depth` - 1 more
 * levels down, its folders: each folder's entries right after it. */
static void list_folder(int fd, const char *shown, int depth, struct listing *listing)
{
	size_t count = 0;
	char **names = sorted_names(fd, &count);
	if (!names)
		return; /* unreadable: listed, without its entries */
	for (size_t i = 0; i < count && !listing->truncated; i++) {
		if (listing->count >= FILES_LIST_LIMIT) {
			listing->truncated = true;
			break;
		}
		char *path = xasprintf("%s/%s", shown, names[i]);
		cJSON *entry = files_entry_json(fd, names[i], path);
		if (entry) {
			cJSON_AddItemToArray(listing->entries, entry);
			listing->count++;
			const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(entry, "type"));
			int child =
				depth > 1 && strcmp(type, "dir") == 0
					? openat(fd, names[i],
						 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
					: -1;
			if (child >= 0) {
				list_folder(child, path, depth - 1, listing);
				close(child);
			}
		}
		free(path);
	}
	free_names(names, count);
}

cJSON *files_list(const char *path, int depth, struct files_error *error)
{
	struct files_place place;
	if (!files_place_resolve(path, false, NULL, &place, error))
		return NULL;
	/* The folder named is reached as any folder on the way is: through
	 * links that stay beneath the work dir. */
	int work_fd = open(files_work_dir(), O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = work_fd < 0
			 ? -1
			 : work_path_open_beneath(work_fd, place.relative[0] ? place.relative : ".",
						  O_RDONLY | O_DIRECTORY);
	int saved = errno;
	if (work_fd >= 0)
		close(work_fd);
	if (fd < 0) {
		if (saved == ENOTDIR)
			snprintf(error->message, sizeof error->message,
				 "%s is not a folder: GET /v1/files/stat tells what it is",
				 place.shown);
		else
			files_errno(error, saved, "list", place.shown);
		if (saved == ENOTDIR)
			error->failure = FAILURE_BAD_REQUEST;
		files_place_free(&place);
		return NULL;
	}
	struct listing listing = {.entries = cJSON_CreateArray()};
	size_t shown_length = strlen(place.shown);
	if (shown_length > 1 && place.shown[shown_length - 1] == '/')
		place.shown[shown_length - 1] = '\0';
	list_folder(fd, place.shown, depth, &listing);
	close(fd);
	files_place_free(&place);
	cJSON *json = cJSON_CreateObject();
	cJSON_AddItemToObject(json, "entries", listing.entries);
	if (listing.truncated)
		cJSON_AddBoolToObject(json, "truncated", true);
	return json;
}

/* ---- removal ---- */

struct removal {
	struct files_identity identity;
	struct files_place place;
	bool recursive;
	unsigned long removed;
	int error; /* errno of the first failure, 0 when all went */
	bool not_empty;
	files_remove_done *done;
	void *arg;
};

/* Removes `name` in `dir_fd` and, when it is a folder, everything in it
 * first; links are removed, never followed. 0, or an errno. */
static int remove_tree(int dir_fd, const char *name, unsigned long *removed)
{
	int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOTDIR && errno != ELOOP)
			return errno;
		if (unlinkat(dir_fd, name, 0) < 0)
			return errno;
		++*removed;
		return 0;
	}
	size_t count = 0;
	char **names = sorted_names(fd, &count);
	int failed = names ? 0 : errno;
	for (size_t i = 0; names && i < count && !failed; i++)
		failed = remove_tree(fd, names[i], removed);
	free_names(names, count);
	close(fd);
	if (failed)
		return failed;
	if (unlinkat(dir_fd, name, AT_REMOVEDIR) < 0)
		return errno;
	++*removed;
	return 0;
}

static void remove_work(void *arg)
{
	struct removal *removal = arg;
	files_identity_take(&removal->identity, true);
	struct files_place *place = &removal->place;
	struct stat st;
	if (fstatat(place->parent_fd, place->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		removal->error = errno;
	} else if (S_ISDIR(st.st_mode) && removal->recursive) {
		removal->error = remove_tree(place->parent_fd, place->name, &removal->removed);
	} else if (unlinkat(place->parent_fd, place->name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) <
		   0) {
		removal->error = errno;
		removal->not_empty = errno == ENOTEMPTY || errno == EEXIST;
	} else {
		removal->removed = 1;
	}
	files_identity_take(&removal->identity, false);
}

static void remove_done(void *arg)
{
	struct removal *removal = arg;
	struct files_error error = {0};
	cJSON *answer = NULL;
	if (removal->not_empty) {
		error.failure = FAILURE_CONFLICT;
		snprintf(error.message, sizeof error.message,
			 "%s is a folder that is not empty: pass recursive=1 to remove it and "
			 "everything in it",
			 removal->place.shown);
	} else if (removal->error) {
		files_errno(&error, removal->error, "remove", removal->place.shown);
		if (removal->removed)
			snprintf(error.message + strlen(error.message),
				 sizeof error.message - strlen(error.message),
				 " (%lu entries were removed before that)", removal->removed);
	} else {
		answer = cJSON_CreateObject();
		cJSON_AddBoolToObject(answer, "ok", true);
		cJSON_AddStringToObject(answer, "path", removal->place.shown);
		cJSON_AddNumberToObject(answer, "removed", (double)removal->removed);
	}
	if (removal->removed)
		steps_add("files", "remove %s (%lu entries)", removal->place.shown,
			  removal->removed);
	removal->done(removal->arg, answer, &error);
	files_place_free(&removal->place);
	free(removal);
}

bool files_remove(const char *path, bool recursive, files_remove_done *done, void *arg,
		  struct files_error *error)
{
	struct removal *removal = xcalloc(1, sizeof *removal);
	*removal = (struct removal){.recursive = recursive, .done = done, .arg = arg};
	if (!files_identity_get(&removal->identity, error)) {
		free(removal);
		return false;
	}
	files_identity_take(&removal->identity, true);
	bool ok = files_place_resolve(path, false, &removal->identity, &removal->place, error);
	files_identity_take(&removal->identity, false);
	if (ok && files_place_is_work_dir(&removal->place)) {
		error->failure = FAILURE_BAD_REQUEST;
		snprintf(error->message, sizeof error->message,
			 "%s is the work dir itself, which is never removed: name something "
			 "inside it",
			 removal->place.shown);
		ok = false;
	}
	if (!ok) {
		files_place_free(&removal->place);
		free(removal);
		return false;
	}
	offload_run(loop, "files: a removal", remove_work, remove_done, removal);
	return true;
}
