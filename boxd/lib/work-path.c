#include "work-path.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
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
	int fd = work_path_open_beneath(work_fd, relative[0] ? relative : ".", O_RDONLY | O_DIRECTORY);
	int saved = errno;
	free(relative);
	errno = saved;
	return fd;
}
