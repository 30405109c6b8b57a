#include "helpers.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xalloc.h"

static char *executable_in(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);
	char resolved[PATH_MAX];
	if (realpath(path, resolved) && access(resolved, X_OK) == 0) {
		free(path);
		return xstrdup(resolved);
	}
	free(path);
	return NULL;
}

char *helper_path(const char *name)
{
	const char *override = getenv("BOXD_HELPER_DIR");
	char *found = override && *override ? executable_in(override, name) : NULL;
	if (found)
		return found;
	char self[PATH_MAX];
	ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
	if (length > 0) {
		self[length] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			found = executable_in(self, name);
			/* In the build tree each program has its own folder. */
			static const char *const build_folders[] = {"../shims", "screen", "archive"};
			for (size_t i = 0; !found && i < sizeof build_folders / sizeof *build_folders; i++) {
				char *folder = xasprintf("%s/%s", self, build_folders[i]);
				found = executable_in(folder, name);
				free(folder);
			}
			if (found)
				return found;
		}
	}
	return xasprintf("%s/%s", BOXD_LIBEXECDIR, name);
}

void helper_spawn_attributes(posix_spawnattr_t *attributes)
{
	posix_spawnattr_init(attributes);
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(attributes, &none);
	posix_spawnattr_setsigdefault(attributes, &all);
	posix_spawnattr_setflags(attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}
