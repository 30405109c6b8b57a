/* work-path.h: names from outside (dest, path) resolved inside the work dir.
 *
 * A name is first checked literally (safe_path_check), so no ".." and no
 * absolute name leads out. Then either openat2 with RESOLVE_BENEATH (no
 * symbolic link may lead out either: downloads), or, for sync, the box's
 * own links are followed as the client follows them (docs/sync.md,
 * "Symbolic links"). */
#ifndef BOXD_WORK_PATH_H
#define BOXD_WORK_PATH_H

#include <stdbool.h>
#include <sys/stat.h>

/* Resolves `dest` (relative to the work dir, or an absolute path under
 * `work_dir`) into a normalized relative path ("" for the work dir itself);
 * NULL with a reason in `why` when it leaves the work dir. Caller frees. */
char *work_path_relative(const char *work_dir, const char *dest, const char **why);

/* Opens `dest` (as work_path_relative() takes it) as a directory below
 * `work_fd`. Returns the fd, or -1 with errno: ENOENT/ENOTDIR when it is not
 * there, EXDEV/ELOOP when it leads out, EINVAL for a bad name (reason in
 * `why`). */
int work_path_open(int work_fd, const char *work_dir, const char *dest, const char **why);

/* openat2(dir_fd, path, flags | O_CLOEXEC) with RESOLVE_BENEATH. */
int work_path_open_beneath(int dir_fd, const char *path, int flags);

/* openat2(dir_fd, path, flags | O_CLOEXEC) following symbolic links
 * wherever they lead, as Node's fs and GNU tar do, but never a /proc magic
 * link. For names already checked literally (safe_path_check): the links
 * followed are the box's own layout. */
int work_path_open_following(int dir_fd, const char *path, int flags);

/* Decides about each symbolic link met on the way: true to refuse it. */
typedef bool work_path_link_check(void *arg, const struct stat *link);

struct work_path_walk {
	int root_fd;                       /* "/" for absolute link targets, opened in advance */
	bool create;                       /* make the path's own missing directories (mode 0755) */
	work_path_link_check *refuse_link; /* optional */
	void *arg;
};

/* Opens the directory `path` (checked literally) below `dir_fd` as an
 * O_PATH fd, one component at a time, following symbolic links by their
 * text (relative ones from the link's directory, absolute ones from
 * `root_fd`), as the kernel would, up to 40 of them. Only the path's own
 * components are created, never those named by a link's target. Returns
 * -1 with errno: EXDEV when refuse_link() refused a link, ELOOP, ENOENT,
 * ENOTDIR, ENAMETOOLONG, or what a system call said. */
int work_path_walk(int dir_fd, const char *path, const struct work_path_walk *how);

#endif
