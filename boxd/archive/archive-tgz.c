#include "archive-tgz.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "io.h"
#include "random-id.h"
#include "safe-path.h"
#include "work-path.h"
#include "xalloc.h"

#define PATH_LIMIT 4096

/* ---- extraction ---- */

/* The symbolic links this extraction made, by device and inode: an entry
 * may never be written through one of them, wherever it points. */
struct made_links {
	struct {
		dev_t dev;
		ino_t ino;
	} * slots;
	size_t count, capacity; /* capacity: a power of two, or 0 */
};

struct extract {
	const struct archive_extract_options *options;
	struct archive_extract_result *result;
	struct archive *archive;
	char name[PATH_LIMIT + 1]; /* the entry being extracted, trimmed */
	char shown[2 * 128 + 8];   /* the same, printable, for messages */
	int parent_fd;             /* the entry's directory, or -1 */
	char parent_path[PATH_LIMIT + 1];
	struct made_links links;
};

/* Names are bytes; messages are JSON text: escape what is not printable ASCII. */
static void make_printable(const char *name, char *out, size_t out_size)
{
	size_t used = 0;
	for (const unsigned char *p = (const unsigned char *)name; *p && used + 5 < out_size; p++) {
		if (*p >= 0x20 && *p < 0x7f && *p != '\\')
			out[used++] = (char)*p;
		else
			used += (size_t)snprintf(out + used, out_size - used, "\\x%02x", *p);
	}
	if (*name && used + 5 >= out_size)
		strcpy(out + used, "...");
	else
		out[used] = '\0';
}

static bool refuse(struct extract *extract, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static bool refuse(struct extract *extract, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	char why[200];
	vsnprintf(why, sizeof why, fmt, args);
	va_end(args);
	extract->result->refused = true;
	snprintf(extract->result->message, sizeof extract->result->message,
		 "archive entry \"%s\" %s", extract->shown, why);
	return false;
}

static bool fail(struct extract *extract, const char *what, int error)
{
	/* The box user may not write there: the caller's to fix, not boxd's. */
	extract->result->refused = error == EACCES || error == EPERM || error == EROFS;
	/* A full disk: the caller can free space and send it again. */
	extract->result->disk_full = error == ENOSPC || error == EDQUOT;
	snprintf(extract->result->message, sizeof extract->result->message,
		 "archive entry \"%s\": %s failed (%s)", extract->shown, what, strerror(error));
	return false;
}

static size_t link_slot(const struct made_links *links, dev_t dev, ino_t ino)
{
	size_t mask = links->capacity - 1;
	size_t index = (size_t)((ino * 0x9e3779b97f4a7c15ull) ^ dev) & mask;
	while (links->slots[index].ino &&
	       !(links->slots[index].ino == ino && links->slots[index].dev == dev))
		index = (index + 1) & mask;
	return index;
}

static void remember_link(struct made_links *links, dev_t dev, ino_t ino)
{
	if (2 * (links->count + 1) > links->capacity) {
		struct made_links bigger = {.capacity = links->capacity ? 2 * links->capacity : 64};
		bigger.slots = xcalloc(bigger.capacity, sizeof *bigger.slots);
		for (size_t i = 0; i < links->capacity; i++)
			if (links->slots[i].ino) {
				size_t slot = link_slot(&bigger, links->slots[i].dev,
							links->slots[i].ino);
				bigger.slots[slot] = links->slots[i];
				bigger.count++;
			}
		free(links->slots);
		*links = bigger;
	}
	size_t slot = link_slot(links, dev, ino);
	if (!links->slots[slot].ino) {
		links->slots[slot].dev = dev;
		links->slots[slot].ino = ino;
		links->count++;
	}
}

static bool made_by_this_archive(void *arg, const struct stat *link)
{
	const struct made_links *links = arg;
	return links->capacity && links->slots[link_slot(links, link->st_dev, link->st_ino)].ino;
}

/* Opens (creating the entry's own missing directories) the directory
 * `path` below the destination. Symbolic links the box already had are
 * followed as GNU tar follows them; one this archive made is refused. */
static int open_directory(struct extract *extract, const char *path, bool create)
{
	struct work_path_walk how = {
		.root_fd = extract->options->root_fd,
		.create = create,
		.refuse_link = made_by_this_archive,
		.arg = &extract->links,
	};
	return work_path_walk(extract->options->dest_fd, path, &how);
}

/* Points extract->parent_fd at the entry's directory; keeps it open for the
 * next entry, which is usually in the same one. */
static bool enter_parent(struct extract *extract, const char **leaf)
{
	char *slash = strrchr(extract->name, '/');
	char parent[PATH_LIMIT + 1] = "";
	*leaf = extract->name;
	if (slash) {
		memcpy(parent, extract->name, (size_t)(slash - extract->name));
		parent[slash - extract->name] = '\0';
		*leaf = slash + 1;
	}
	if (extract->parent_fd >= 0 && strcmp(parent, extract->parent_path) == 0)
		return true;
	if (extract->parent_fd >= 0)
		close(extract->parent_fd);
	extract->parent_fd = open_directory(extract, parent, true);
	if (extract->parent_fd < 0) {
		if (errno == EXDEV)
			return refuse(extract, "is below a symbolic link the archive itself made");
		if (errno == ELOOP)
			return refuse(extract, "is below too many symbolic links");
		if (errno == ENOTDIR)
			return refuse(extract,
				      "is below something that is not a directory in dest");
		if (errno == ENOENT)
			return refuse(extract, "is below a symbolic link to nothing");
		return fail(extract, "opening its directory", errno);
	}
	strcpy(extract->parent_path, parent);
	return true;
}

/* A fresh name beside `leaf` for the temporary copy. */
static void temporary_name(const char *leaf, char *out, size_t out_size)
{
	char nonce[17];
	random_hex(nonce, 8);
	snprintf(out, out_size, ".%.200s.boxd-%s", leaf, nonce);
}

/* Moves `temporary` over `leaf`; a directory in the way is an error. */
static bool put_in_place(struct extract *extract, const char *temporary, const char *leaf)
{
	if (renameat(extract->parent_fd, temporary, extract->parent_fd, leaf) == 0)
		return true;
	int error = errno;
	unlinkat(extract->parent_fd, temporary, 0);
	if (error == EISDIR || error == ENOTEMPTY || error == EEXIST)
		return refuse(extract, "would replace a directory in dest with a file");
	return fail(extract, "renaming into place", error);
}

static bool copy_data(struct extract *extract, int fd, struct archive_entry *entry)
{
	const void *block;
	size_t length;
	la_int64_t offset, end = 0;
	int status;
	while ((status = archive_read_data_block(extract->archive, &block, &length, &offset)) ==
	       ARCHIVE_OK) {
		if (!io_pwrite_all(fd, block, length, offset))
			return fail(extract, "writing", errno);
		extract->result->bytes += (uint64_t)length;
		end = offset + (la_int64_t)length;
	}
	if (status != ARCHIVE_EOF) {
		snprintf(extract->result->message, sizeof extract->result->message,
			 "archive entry \"%s\" is truncated or corrupt: %s", extract->shown,
			 archive_error_string(extract->archive));
		extract->result->refused = true;
		return false;
	}
	/* Sparse entries may end in a hole: the size makes it, no data is written. */
	if (end < archive_entry_size(entry) && ftruncate(fd, archive_entry_size(entry)) < 0)
		return fail(extract, "sizing", errno);
	return true;
}

/* A new name is written in place (nothing good to protect there; it is
 * removed again on failure); an existing one is replaced through a
 * temporary file renamed over it once complete. */
static bool extract_file(struct extract *extract, struct archive_entry *entry, const char *leaf)
{
	/* Set-id bits are dropped: an upload never makes a privileged program. */
	mode_t mode = archive_entry_perm(entry) & 01777;
	char temporary[256];
	const char *name = leaf;
	int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	int fd = openat(extract->parent_fd, leaf, flags, mode);
	if (fd < 0 && errno == EEXIST) {
		temporary_name(leaf, temporary, sizeof temporary);
		name = temporary;
		fd = openat(extract->parent_fd, temporary, flags, mode);
	}
	if (fd < 0)
		return fail(extract, "creating", errno);
	struct timespec times[2] = {
		{.tv_nsec = UTIME_OMIT},
		{.tv_sec = archive_entry_mtime(entry), .tv_nsec = archive_entry_mtime_nsec(entry)},
	};
	bool ok = copy_data(extract, fd, entry);
	if (ok && archive_entry_mtime_is_set(entry))
		futimens(fd, times);
	close(fd);
	if (!ok) {
		unlinkat(extract->parent_fd, name, 0);
		return false;
	}
	if (name != leaf && !put_in_place(extract, temporary, leaf))
		return false;
	if (extract->options->on_file)
		extract->options->on_file(extract->options->on_file_arg, extract->name);
	return true;
}

static bool extract_symlink(struct extract *extract, struct archive_entry *entry, const char *leaf)
{
	const char *target = archive_entry_symlink(entry);
	if (!target || !*target)
		return refuse(extract, "is a symbolic link without a target");
	char temporary[256];
	temporary_name(leaf, temporary, sizeof temporary);
	if (symlinkat(target, extract->parent_fd, temporary) < 0)
		return fail(extract, "creating the symbolic link", errno);
	struct stat st;
	if (fstatat(extract->parent_fd, temporary, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		int error = errno;
		unlinkat(extract->parent_fd, temporary, 0);
		return fail(extract, "checking the symbolic link", error);
	}
	remember_link(&extract->links, st.st_dev, st.st_ino);
	return put_in_place(extract, temporary, leaf);
}

static bool extract_hardlink(struct extract *extract, const char *target_name, const char *leaf)
{
	char target[PATH_LIMIT + 1];
	snprintf(target, sizeof target, "%s", target_name);
	size_t length = safe_path_trim(target, strlen(target));
	const char *unsafe = safe_path_check(target, length);
	if (unsafe)
		return refuse(extract, "is a hard link to a path that %s", unsafe);
	char *slash = strrchr(target, '/');
	const char *target_leaf = slash ? slash + 1 : target;
	if (slash)
		*slash = '\0';
	int target_dir =
		slash ? open_directory(extract, target, false) : dup(extract->options->dest_fd);
	if (target_dir < 0 && errno == EXDEV)
		return refuse(extract,
			      "is a hard link below a symbolic link the archive itself made");
	if (target_dir < 0)
		return refuse(extract, "is a hard link to a file not in dest");
	char temporary[256];
	temporary_name(leaf, temporary, sizeof temporary);
	/* Flags 0: a symbolic link as target is linked itself, never followed. */
	int status = linkat(target_dir, target_leaf, extract->parent_fd, temporary, 0);
	int error = errno;
	close(target_dir);
	if (status < 0)
		return error == ENOENT ? refuse(extract, "is a hard link to a file not in dest")
				       : fail(extract, "linking", error);
	return put_in_place(extract, temporary, leaf);
}

static bool extract_directory(struct extract *extract, struct archive_entry *entry,
			      const char *leaf)
{
	mode_t mode = (archive_entry_perm(entry) & 01777) | 0700;
	struct stat st;
	if (fstatat(extract->parent_fd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISDIR(st.st_mode)) {
		/* Over what is there: a file or link in the way gives way. */
		if (unlinkat(extract->parent_fd, leaf, 0) < 0)
			return fail(extract, "replacing what is in the way", errno);
	}
	if (mkdirat(extract->parent_fd, leaf, mode) < 0 && errno != EEXIST)
		return fail(extract, "creating the directory", errno);
	fchmodat(extract->parent_fd, leaf, mode, 0);
	return true;
}

static bool extract_entry(struct extract *extract, struct archive_entry *entry)
{
	const char *raw = archive_entry_pathname(entry);
	if (!raw)
		raw = "";
	make_printable(raw, extract->shown, sizeof extract->shown);
	if (strlen(raw) > PATH_LIMIT)
		return refuse(extract, "has a name longer than %d bytes", PATH_LIMIT);
	strcpy(extract->name, raw);
	size_t length = safe_path_trim(extract->name, strlen(extract->name));
	mode_t type = archive_entry_filetype(entry);
	const char *hardlink = archive_entry_hardlink(entry);
	if (length == 0 && type == AE_IFDIR && !hardlink)
		return true; /* "./": the destination itself */
	const char *unsafe = safe_path_check(extract->name, length);
	if (unsafe)
		return refuse(extract, "%s", unsafe);
	if (!hardlink && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
		return refuse(extract, "is a device node, fifo or socket");
	const char *leaf;
	if (!enter_parent(extract, &leaf))
		return false;
	if (hardlink) {
		extract->result->files++;
		return extract_hardlink(extract, hardlink, leaf);
	}
	if (type == AE_IFDIR)
		return extract_directory(extract, entry, leaf);
	extract->result->files++;
	if (type == AE_IFLNK)
		return extract_symlink(extract, entry, leaf);
	return extract_file(extract, entry, leaf);
}

bool archive_extract(const struct archive_extract_options *options,
		     struct archive_extract_result *result)
{
	memset(result, 0, sizeof *result);
	struct extract extract = {.options = options, .result = result, .parent_fd = -1};
	umask(0); /* modes come from the archive, exactly */
	extract.archive = archive_read_new();
	archive_read_support_filter_gzip(extract.archive);
	archive_read_support_filter_none(extract.archive);
	archive_read_support_format_tar(extract.archive);
	archive_read_support_format_gnutar(extract.archive);
	bool ok = true;
	if (archive_read_open_fd(extract.archive, options->input_fd, 256 * 1024) != ARCHIVE_OK) {
		snprintf(result->message, sizeof result->message, "the upload is not a tar.gz: %s",
			 archive_error_string(extract.archive));
		result->refused = ok = false;
		result->refused = true;
	}
	struct archive_entry *entry;
	while (ok) {
		int status = archive_read_next_header(extract.archive, &entry);
		if (status == ARCHIVE_EOF)
			break;
		if (status < ARCHIVE_WARN) {
			snprintf(result->message, sizeof result->message,
				 "the upload is not a complete tar.gz (after %llu files): %s",
				 (unsigned long long)result->files,
				 archive_error_string(extract.archive));
			result->refused = true;
			ok = false;
			break;
		}
		ok = extract_entry(&extract, entry);
	}
	if (extract.parent_fd >= 0)
		close(extract.parent_fd);
	free(extract.links.slots);
	archive_read_free(extract.archive);
	return ok;
}

/* ---- creation ---- */

struct create {
	struct archive *archive;
	struct archive_entry *entry;
	char path[PATH_LIMIT + 1]; /* the entry's name in the archive */
	char *buffer;
	char *message;
	size_t message_size;
};

static bool create_failed(struct create *create, const char *what, int error)
{
	snprintf(create->message, create->message_size, "%s %s failed: %s", what, create->path,
		 error ? strerror(error) : archive_error_string(create->archive));
	return false;
}

static bool add_tree(struct create *create, int parent_fd, const char *name);

static bool add_contents(struct create *create, int fd)
{
	for (;;) {
		ssize_t got = read(fd, create->buffer, 256 * 1024);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return create_failed(create, "reading", errno);
		if (got == 0)
			return true;
		if (archive_write_data(create->archive, create->buffer, (size_t)got) < 0)
			return create_failed(create, "writing", 0);
	}
}

static bool add_directory_entries(struct create *create, int dir_fd)
{
	DIR *dir = fdopendir(dir_fd);
	if (!dir) {
		close(dir_fd);
		return create_failed(create, "listing", errno);
	}
	size_t length = strlen(create->path);
	bool ok = true;
	struct dirent *child;
	while (ok && (child = readdir(dir))) {
		if (strcmp(child->d_name, ".") == 0 || strcmp(child->d_name, "..") == 0)
			continue;
		if (length + 1 + strlen(child->d_name) > PATH_LIMIT) {
			ok = create_failed(create, "naming", ENAMETOOLONG);
			break;
		}
		snprintf(create->path + length, sizeof create->path - length, "/%s", child->d_name);
		ok = add_tree(create, dirfd(dir), child->d_name);
		create->path[length] = '\0';
	}
	closedir(dir);
	return ok;
}

/* Adds `name` (inside `parent_fd`) as create->path, recursing into directories. */
static bool add_tree(struct create *create, int parent_fd, const char *name)
{
	struct stat st;
	if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? true : create_failed(create, "reading", errno);
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
		return true; /* sockets, fifos, devices: nothing to download */
	int fd = -1;
	if (!S_ISLNK(st.st_mode)) {
		fd = openat(parent_fd, name,
			    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
				    (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
		if (fd < 0)
			return errno == ENOENT ? true : create_failed(create, "opening", errno);
		fstat(fd, &st);
	}
	archive_entry_clear(create->entry);
	archive_entry_set_pathname(create->entry, create->path);
	archive_entry_copy_stat(create->entry, &st);
	archive_entry_set_uname(create->entry, NULL);
	archive_entry_set_gname(create->entry, NULL);
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_LIMIT + 1];
		ssize_t length = readlinkat(parent_fd, name, target, PATH_LIMIT);
		if (length < 0)
			return create_failed(create, "reading the link", errno);
		target[length] = '\0';
		archive_entry_set_symlink(create->entry, target);
		archive_entry_set_size(create->entry, 0);
	} else if (S_ISDIR(st.st_mode)) {
		archive_entry_set_size(create->entry, 0);
	}
	bool ok = archive_write_header(create->archive, create->entry) >= ARCHIVE_WARN ||
		  create_failed(create, "writing", 0);
	if (ok && S_ISREG(st.st_mode))
		ok = add_contents(create, fd);
	if (ok && S_ISDIR(st.st_mode))
		return add_directory_entries(create, fd); /* takes fd */
	if (fd >= 0)
		close(fd);
	return ok;
}

bool archive_create(int parent_fd, const char *name, int output_fd, char *message,
		    size_t message_size)
{
	struct create create = {
		.archive = archive_write_new(),
		.entry = archive_entry_new(),
		.buffer = xmalloc(256 * 1024),
		.message = message,
		.message_size = message_size,
	};
	snprintf(create.path, sizeof create.path, "%s", name);
	archive_write_set_format_pax_restricted(create.archive);
	archive_write_add_filter_gzip(create.archive);
	/* Level 1: downloads cross a fast local link; compressing harder costs
	 * more time than the bytes it saves. */
	archive_write_set_filter_option(create.archive, "gzip", "compression-level", "1");
	archive_write_set_bytes_per_block(create.archive, 64 * 1024);
	bool ok = archive_write_open_fd(create.archive, output_fd) == ARCHIVE_OK ||
		  create_failed(&create, "starting", 0);
	if (ok)
		ok = add_tree(&create, parent_fd, name);
	if (archive_write_close(create.archive) != ARCHIVE_OK && ok)
		ok = create_failed(&create, "finishing", 0);
	archive_write_free(create.archive);
	archive_entry_free(create.entry);
	free(create.buffer);
	return ok;
}
