/* files.c: where a path leads, who writes, and the single-entry calls of
 * files.h (stat, mkdir, move, chmod). The whole-file write is
 * files-put.c's; the walks (list, recursive remove) are files-tree.c's. */
#include "files-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "steps.h"
#include "users.h"
#include "utf8.h"
#include "work-path.h"
#include "xalloc.h"

static const struct boxd_config *settings; /* given at files_init */
static gid_t own_groups[64];               /* boxd's, given back after a write */
static int own_group_count;

const char *files_work_dir(void)
{
	return settings->work_dir;
}

void files_init(struct event_base *base, const struct boxd_config *config)
{
	settings = config;
	int count = getgroups(64, own_groups);
	own_group_count = count < 0 ? 0 : count;
	files_tree_init(base);
}

/* ---- who writes ---- */

bool files_identity_get(struct files_identity *identity, struct files_error *error)
{
	memset(identity, 0, sizeof *identity);
	if (geteuid() != 0 || !settings->user)
		return true;
	const struct user_entry *entry = users_find(settings->user);
	if (!entry) {
		error->failure = FAILURE_INTERNAL;
		snprintf(error->message, sizeof error->message, "the box user %s does not exist",
			 settings->user);
		return false;
	}
	if (entry->uid == 0)
		return true;
	identity->act = true;
	identity->uid = entry->uid;
	identity->gid = entry->gid;
	size_t count = entry->group_count < 64 ? entry->group_count : 64;
	memcpy(identity->groups, entry->groups, count * sizeof *entry->groups);
	identity->group_count = (int)count;
	return true;
}

void files_identity_take(const struct files_identity *identity, bool take)
{
	if (!identity->act)
		return;
	/* Raw calls: each changes this thread's credentials only. Taking a
	 * non-zero fsuid takes the file capabilities out of effect; giving
	 * back 0 restores them. */
	if (take) {
		syscall(SYS_setgroups, identity->group_count, identity->groups);
		setfsgid(identity->gid);
		setfsuid(identity->uid);
	} else {
		setfsuid(0);
		setfsgid(0);
		syscall(SYS_setgroups, own_group_count, own_groups);
	}
}

/* ---- where a path leads ---- */

char *files_shown(const char *relative)
{
	if (!relative[0])
		return xstrdup(settings->work_dir);
	const char *dir = settings->work_dir;
	return xasprintf("%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", relative);
}

void files_errno(struct files_error *error, int code, const char *what, const char *shown)
{
	enum failure failure = FAILURE_INTERNAL;
	const char *said = "";
	switch (code) {
	case ENOENT:
		failure = FAILURE_NOT_FOUND;
		said = ": nothing is there";
		break;
	case ENOTDIR:
		failure = FAILURE_NOT_FOUND;
		said = ": a part of the path is not a folder";
		break;
	case EXDEV:
	case ELOOP:
		failure = FAILURE_BAD_REQUEST;
		said = ": it leads outside the work dir through a symbolic link";
		break;
	case EACCES:
	case EPERM:
	case EROFS:
		failure = FAILURE_FORBIDDEN;
		said = " as the box user";
		break;
	case EEXIST:
	case ENOTEMPTY:
	case EISDIR:
	case EBUSY: failure = FAILURE_CONFLICT; break;
	case ENAMETOOLONG: failure = FAILURE_BAD_REQUEST; break;
	default:
		if (failure_disk_full(code)) {
			failure = FAILURE_DISK_FULL;
			said = " (free space there and retry)";
		}
	}
	error->failure = failure;
	snprintf(error->message, sizeof error->message, "cannot %s %s%s (%s)", what, shown, said,
		 strerror(code));
}

static bool refuse(struct files_error *error, enum failure failure, const char *format, ...)
	__attribute__((format(printf, 3, 4)));
static bool refuse(struct files_error *error, enum failure failure, const char *format, ...)
{
	error->failure = failure;
	va_list args;
	va_start(args, format);
	vsnprintf(error->message, sizeof error->message, format, args);
	va_end(args);
	return false;
}

/* Every name of `relative` fits NAME_MAX. */
static bool names_fit(const char *relative)
{
	for (const char *at = relative; *at;) {
		const char *slash = strchr(at, '/');
		size_t length = slash ? (size_t)(slash - at) : strlen(at);
		if (length > NAME_MAX)
			return false;
		at += length + (slash ? 1 : 0);
	}
	return true;
}

/* mkdir -p of `relative` below `work_fd`, each folder opened beneath. */
static int make_folders(int work_fd, char *relative)
{
	for (char *at = relative;; at++) {
		if (*at != '/' && *at != '\0')
			continue;
		char kept = *at;
		*at = '\0';
		int fd = work_path_open_beneath(work_fd, relative, O_PATH | O_DIRECTORY);
		if (fd < 0 && errno == ENOENT) {
			char *slash = strrchr(relative, '/');
			int parent = slash ? (*slash = '\0',
					      work_path_open_beneath(work_fd, relative,
								     O_PATH | O_DIRECTORY))
					   : dup(work_fd);
			if (slash)
				*slash = '/';
			int made = parent < 0 ? -1
					      : mkdirat(parent, slash ? slash + 1 : relative, 0777);
			int saved = errno;
			if (parent >= 0)
				close(parent);
			if (made < 0 && saved != EEXIST) {
				*at = kept;
				errno = saved;
				return -1;
			}
			fd = 0; /* made */
		}
		*at = kept;
		if (fd < 0)
			return -1;
		if (fd > 0)
			close(fd);
		if (kept == '\0')
			return 0;
	}
}

bool files_place_resolve(const char *path, bool make_parents, const struct files_identity *as,
			 struct files_place *place, struct files_error *error)
{
	memset(place, 0, sizeof *place);
	place->parent_fd = -1;
	if (!path || !*path)
		return refuse(error, FAILURE_BAD_REQUEST,
			      "the path is missing: name a file or folder under the work dir");
	if (strlen(path) >= PATH_MAX)
		return refuse(error, FAILURE_BAD_REQUEST,
			      "the path is longer than PATH_MAX (4096 bytes)");
	const char *why = NULL;
	char *relative = work_path_relative(settings->work_dir, path, &why);
	if (!relative)
		return refuse(error, FAILURE_BAD_REQUEST, "the path %s %s", path, why);
	if (!names_fit(relative)) {
		free(relative);
		return refuse(error, FAILURE_BAD_REQUEST,
			      "the path %s has a name longer than NAME_MAX (255 bytes)", path);
	}
	place->relative = relative;
	place->shown = files_shown(relative);
	/* The work dir itself is boxd's to open, wherever it lies: the box
	 * user's rights start inside it. */
	if (as)
		files_identity_take(as, false);
	int work_fd = open(settings->work_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (as)
		files_identity_take(as, true);
	if (work_fd < 0) {
		files_errno(error, errno, "open the work dir", settings->work_dir);
		return false;
	}
	char *slash = strrchr(relative, '/');
	place->name = xstrdup(!relative[0] ? "." : slash ? slash + 1 : relative);
	if (!slash) {
		place->parent_fd = work_fd;
		return true;
	}
	*slash = '\0';
	int made = make_parents ? make_folders(work_fd, relative) : 0;
	place->parent_fd =
		made < 0 ? -1 : work_path_open_beneath(work_fd, relative, O_PATH | O_DIRECTORY);
	int saved = errno;
	*slash = '/';
	close(work_fd);
	if (place->parent_fd < 0) {
		files_errno(error, saved, make_parents ? "make the folders of" : "reach",
			    place->shown);
		return false;
	}
	return true;
}

void files_place_free(struct files_place *place)
{
	if (place->parent_fd >= 0)
		close(place->parent_fd);
	free(place->name);
	free(place->relative);
	free(place->shown);
	memset(place, 0, sizeof *place);
	place->parent_fd = -1;
}

bool files_place_is_work_dir(const struct files_place *place)
{
	return place->relative && !place->relative[0];
}

/* ---- the stat answer ---- */

/* `bytes` as a JSON string; a name that is not UTF-8 (Linux names are
 * bytes) is shown with U+FFFD for its bad bytes and given exactly, in hex,
 * as `<key>Hex`. */
void files_add_name(cJSON *json, const char *key, const char *bytes, size_t length)
{
	if (utf8_valid_prefix(bytes, length) == length) {
		cJSON_AddItemToObject(json, key, cJSON_CreateString(bytes));
		return;
	}
	char *shown = utf8_sanitize(bytes, length, NULL);
	cJSON_AddItemToObject(json, key, cJSON_CreateString(shown));
	free(shown);
	char *hex = xmalloc(length * 2 + 1);
	for (size_t i = 0; i < length; i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned char)bytes[i]);
	char hex_key[32];
	snprintf(hex_key, sizeof hex_key, "%sHex", key);
	cJSON_AddStringToObject(json, hex_key, hex);
	free(hex);
}

static const char *type_of(mode_t mode)
{
	return S_ISREG(mode) ? "file" : S_ISDIR(mode) ? "dir" : S_ISLNK(mode) ? "link" : "other";
}

cJSON *files_entry_json(int dir_fd, const char *name, const char *shown)
{
	struct stat st;
	if (!name || fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return NULL;
	cJSON *json = cJSON_CreateObject();
	files_add_name(json, "path", shown, strlen(shown));
	cJSON_AddStringToObject(json, "type", type_of(st.st_mode));
	cJSON_AddNumberToObject(json, "size", (double)st.st_size);
	char mode[8];
	snprintf(mode, sizeof mode, "%04o", (unsigned)(st.st_mode & 07777));
	cJSON_AddStringToObject(json, "mode", mode);
	cJSON_AddNumberToObject(json, "mtimeMs",
				(double)st.st_mtim.tv_sec * 1000.0 +
					(double)st.st_mtim.tv_nsec / 1e6);
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t got = readlinkat(dir_fd, name, target, sizeof target - 1);
		if (got >= 0) {
			target[got] = '\0';
			files_add_name(json, "target", target, (size_t)got);
		}
	}
	return json;
}

cJSON *files_stat(const char *path, struct files_error *error)
{
	struct files_place place;
	if (!files_place_resolve(path, false, NULL, &place, error))
		return NULL;
	cJSON *json = files_entry_json(place.parent_fd, place.name, place.shown);
	if (!json)
		files_errno(error, errno, "stat", place.shown);
	files_place_free(&place);
	return json;
}

int files_open_regular(const char *path, struct files_error *error)
{
	struct files_place place;
	if (!files_place_resolve(path, false, NULL, &place, error))
		return -1;
	int fd =
		openat(place.parent_fd, place.name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		files_errno(error, errno, "read", place.shown);
	} else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		fd = -1;
		refuse(error, FAILURE_BAD_REQUEST, "%s is not a regular file", place.shown);
	}
	files_place_free(&place);
	return fd;
}

bool files_parse_mode(const char *text, mode_t *mode)
{
	size_t length = text ? strlen(text) : 0;
	if (length == 0 || length > 5 || strspn(text, "01234567") != length)
		return false;
	unsigned long value = strtoul(text, NULL, 8);
	if (value > 07777)
		return false;
	*mode = (mode_t)value;
	return true;
}

/* ---- the single-entry writes ---- */

/* Resolves `path` for a write as the box user: the identity is taken on
 * success (the caller gives it back), never the work dir itself. */
static bool place_for_write(const char *path, bool make_parents, struct files_identity *identity,
			    struct files_place *place, struct files_error *error)
{
	if (!files_identity_get(identity, error))
		return false;
	files_identity_take(identity, true);
	if (!files_place_resolve(path, make_parents, identity, place, error)) {
		files_identity_take(identity, false);
		return false;
	}
	if (files_place_is_work_dir(place)) {
		refuse(error, FAILURE_BAD_REQUEST,
		       "%s is the work dir itself: name something inside it", place->shown);
		files_place_free(place);
		files_identity_take(identity, false);
		return false;
	}
	return true;
}

/* The stat of `place` after a write, the identity given back. */
static cJSON *written(const struct files_identity *identity, struct files_place *place, bool ok,
		      const char *what, struct files_error *error)
{
	if (!ok)
		files_errno(error, errno, what, place->shown);
	cJSON *json = ok ? files_entry_json(place->parent_fd, place->name, place->shown) : NULL;
	if (ok && !json)
		files_errno(error, errno, "stat", place->shown);
	files_identity_take(identity, false);
	if (json)
		steps_add("files", "%s %s", what, place->shown);
	files_place_free(place);
	return json;
}

cJSON *files_mkdir(const char *path, bool parents, mode_t mode, struct files_error *error)
{
	struct files_identity identity;
	struct files_place place;
	if (!place_for_write(path, parents, &identity, &place, error))
		return NULL;
	bool ok = mkdirat(place.parent_fd, place.name, mode) == 0;
	struct stat st;
	if (!ok && errno == EEXIST && parents &&
	    fstatat(place.parent_fd, place.name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode))
		ok = true; /* mkdir -p: there already */
	else if (!ok && errno == EEXIST)
		errno = EEXIST;
	return written(&identity, &place, ok, "make the folder", error);
}

cJSON *files_move(const char *from, const char *to, bool overwrite, struct files_error *error)
{
	struct files_identity identity;
	struct files_place source, target;
	if (!place_for_write(from, false, &identity, &source, error))
		return NULL;
	files_identity_take(&identity, false);
	if (!place_for_write(to, false, &identity, &target, error)) {
		files_place_free(&source);
		return NULL;
	}
	int status = (int)syscall(SYS_renameat2, source.parent_fd, source.name, target.parent_fd,
				  target.name, overwrite ? 0 : RENAME_NOREPLACE);
	int saved = errno;
	if (status < 0 && saved == EINVAL) {
		/* The one EINVAL of a rename on a file system that has it: into itself. */
		files_identity_take(&identity, false);
		error->failure = FAILURE_BAD_REQUEST;
		snprintf(error->message, sizeof error->message,
			 "cannot move %s into %s: a folder cannot go into itself", source.shown,
			 target.shown);
		files_place_free(&source);
		files_place_free(&target);
		return NULL;
	}
	if (status < 0 &&
	    (saved == EEXIST || saved == ENOTEMPTY || saved == EISDIR || saved == ENOTDIR)) {
		files_identity_take(&identity, false);
		error->failure =
			saved == ENOTDIR && !overwrite ? FAILURE_NOT_FOUND : FAILURE_CONFLICT;
		snprintf(error->message, sizeof error->message,
			 saved == EEXIST      ? "%s is there already: pass \"overwrite\": true to "
						"replace it (%s)"
			 : saved == ENOTEMPTY ? "%s is a folder that is not empty (%s)"
					      : "%s cannot replace what is there: a folder and a "
						"file do not replace each other (%s)",
			 target.shown, strerror(saved));
		files_place_free(&source);
		files_place_free(&target);
		return NULL;
	}
	char what[PATH_MAX + 16];
	snprintf(what, sizeof what, "move %s to", source.shown);
	errno = saved;
	files_place_free(&source);
	return written(&identity, &target, status == 0, what, error);
}

cJSON *files_chmod(const char *path, mode_t mode, struct files_error *error)
{
	struct files_identity identity;
	struct files_place place;
	if (!place_for_write(path, false, &identity, &place, error))
		return NULL;
	/* An O_PATH fd of the entry itself, then chmod through /proc: the entry
	 * can neither be a link nor become one between the check and the
	 * change. */
	int fd = place.name ? openat(place.parent_fd, place.name, O_PATH | O_NOFOLLOW | O_CLOEXEC)
			    : -1;
	struct stat st;
	bool ok = fd >= 0 && fstat(fd, &st) == 0;
	if (ok && S_ISLNK(st.st_mode)) {
		close(fd);
		files_identity_take(&identity, false);
		refuse(error, FAILURE_BAD_REQUEST,
		       "%s is a symbolic link, which has no mode of its own: name what it leads to",
		       place.shown);
		files_place_free(&place);
		return NULL;
	}
	if (ok) {
		char proc[64];
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
		ok = chmod(proc, mode) == 0;
	}
	int saved = errno;
	if (fd >= 0)
		close(fd);
	errno = saved;
	return written(&identity, &place, ok, "change the mode of", error);
}
