/* archive-tgz.h: tar.gz in and out, for the sandboxed boxd-archive
 * worker only (named so as not to shadow libarchive's <archive.h>);
 * libarchive never runs inside boxd itself.
 *
 * Extraction is secure by construction: every name is checked literally
 * (safe_path_check), so neither ".." nor an absolute name can lead out, and
 * every directory is walked one component at a time from the destination
 * (work_path_walk): a symbolic link this archive made is never followed
 * (the classic tar attack), one the box already had is the user's own
 * layout and is followed as GNU tar follows it. The worker writes as the box
 * user (archive-worker.c), so a link to elsewhere reaches only what that user
 * could write anyway. Device nodes, fifos and sockets are refused. Each file is written under a
 * temporary name beside its final one and renamed into place once complete,
 * so a failure never leaves a half-written file where a good one was. */
#ifndef BOXD_ARCHIVE_H
#define BOXD_ARCHIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct archive_extract_options {
	int dest_fd;  /* the destination directory */
	int root_fd;  /* "/": where absolute targets of the box's own links start */
	int input_fd; /* the tar.gz stream */
	/* Optional: told the name (relative to dest) of each regular file put
	 * in place, for the hash cache. */
	void (*on_file)(void *arg, const char *name);
	void *on_file_arg;
};

struct archive_extract_result {
	uint64_t files; /* regular files, hard links and symbolic links */
	uint64_t bytes; /* regular file content */
	bool refused;   /* true: the archive asked for something not allowed (bad_request) */
	bool disk_full; /* true: a write failed for want of space (ENOSPC, EDQUOT: disk_full) */
	char message[640];
};

/* Extracts until the end of the stream or the first error. True on success;
 * else `result->message` says which entry and why. */
bool archive_extract(const struct archive_extract_options *options,
		     struct archive_extract_result *result);

/* Writes `name` (a file or directory inside `parent_fd`) as a tar.gz to
 * `output_fd`, with `name` as the top entry. Symbolic links are stored as
 * links, never followed. False with `message` on failure. */
bool archive_create(int parent_fd, const char *name, int output_fd, char *message,
		    size_t message_size);

#endif
