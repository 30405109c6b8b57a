#include "work-path.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "safe-path.h"
#include "xalloc.h"

int work_path_open_beneath(int dir_fd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, dir_fd, path, &how, sizeof how);
}

int work_path_open_following(int dir_fd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, dir_fd, path, &how, sizeof how);
}

#define WALK_LINKS 40 /* the kernel's limit too */
#define WALK_QUEUE 8192

static int walk_fail(int fd, int error)
{
	if (fd >= 0)
		close(fd);
	errno = error;
	return -1;
}

int work_path_walk(int dir_fd, const char *path, const struct work_path_walk *how)
{
	/* What is left to resolve, components separated by '/'. The path's own
	 * names are always its tail: `own` bytes long. */
	char queue[WALK_QUEUE];
	size_t length = strlen(path), at = 0, own = length;
	if (length >= sizeof queue)
		return walk_fail(-1, ENAMETOOLONG);
	memcpy(queue, path, length + 1);
	int fd = openat(dir_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int links = 0;
	while (fd >= 0 && at < length) {
		const char *start = queue + at;
		const char *slash = memchr(start, '/', length - at);
		size_t part = slash ? (size_t)(slash - start) : length - at;
		bool is_own = length - at <= own;
		char name[NAME_MAX + 1];
		if (part > NAME_MAX)
			return walk_fail(fd, ENAMETOOLONG);
		memcpy(name, start, part);
		name[part] = '\0';
		at += part + (slash ? 1 : 0);
		if (part == 0 || strcmp(name, ".") == 0)
			continue;
		int next;
		if (strcmp(name, "..") == 0) {
			/* Only a link's target can say "..": it means the physical
			 * parent of where the walk is, as for the kernel. */
			next = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		} else {
			struct stat st;
			if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				if (errno != ENOENT || !how->create || !is_own)
					return walk_fail(fd, errno);
				if (mkdirat(fd, name, 0755) < 0 && errno != EEXIST)
					return walk_fail(fd, errno);
				if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
					return walk_fail(fd, errno);
			}
			if (S_ISLNK(st.st_mode)) {
				if (how->refuse_link && how->refuse_link(how->arg, &st))
					return walk_fail(fd, EXDEV);
				if (++links > WALK_LINKS)
					return walk_fail(fd, ELOOP);
				char target[PATH_MAX];
				ssize_t got = readlinkat(fd, name, target, sizeof target);
				if (got < 0)
					return walk_fail(fd, errno);
				if (got == 0 || (size_t)got == sizeof target)
					return walk_fail(fd, got ? ENAMETOOLONG : ENOENT);
				size_t rest = length - at;
				if ((size_t)got + 1 + rest >= sizeof queue)
					return walk_fail(fd, ENAMETOOLONG);
				memmove(queue + got + 1, queue + at, rest + 1);
				memcpy(queue, target, (size_t)got);
				queue[got] = '/';
				length = (size_t)got + 1 + rest;
				at = 0;
				if (rest < own)
					own = rest;
				if (target[0] == '/') {
					close(fd);
					fd = openat(how->root_fd, ".",
						    O_PATH | O_DIRECTORY | O_CLOEXEC);
				}
				continue;
			}
			if (!S_ISDIR(st.st_mode))
				return walk_fail(fd, ENOTDIR);
			/* O_NOFOLLOW: a link put there since the fstatat is not followed. */
			next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		int saved = errno;
		close(fd);
		errno = saved;
		fd = next;
	}
	return fd;
}

char *work_path_relative(const char *work_dir, const char *dest, const char **why)
{
	size_t work_length = strlen(work_dir);
	while (work_length > 1 && work_dir[work_length - 1] == '/')
		work_length--;
	if (dest[0] == '/') {
		if (strncmp(dest, work_dir, work_length) != 0 ||
		    (dest[work_length] != '/' && dest[work_length] != '\0')) {
			*why = "is outside the work dir";
			return NULL;
		}
		dest += work_length;
		while (*dest == '/')
			dest++;
	}
	char *relative = xstrdup(dest);
	size_t length = safe_path_trim(relative, strlen(relative));
	if (length == 0)
		return relative;
	*why = safe_path_check(relative, length);
	if (*why) {
		free(relative);
		return NULL;
	}
	return relative;
}

int work_path_open(int work_fd, const char *work_dir, const char *dest, const char **why)
{
	char *relative = work_path_relative(work_dir, dest, why);
	if (!relative) {
		errno = EINVAL;
		return -1;
	}
	int fd = work_path_open_beneath(work_fd, relative[0] ? relative : ".",
					O_RDONLY | O_DIRECTORY);
	int saved = errno;
	free(relative);
	errno = saved;
	return fd;
}
