/* work-path.h: names from outside (dest, path) resolved inside the work dir.
 *
 * A name is first checked literally (safe_path_check), then opened with
 * openat2 and RESOLVE_BENEATH, so neither ".." nor a symbolic link, old or
 * new, can lead outside the directory it is resolved from. */
#ifndef BOXD_WORK_PATH_H
#define BOXD_WORK_PATH_H

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

#endif
