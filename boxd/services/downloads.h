/* downloads.h: downloads (GET /v1/files, API.md "Sync and files"): a
 * regular file under the work dir, whole or a range of it, or a folder as a
 * tar.gz that boxd-archive makes (archive-client.h), with the folder as its
 * top entry. Both are produced only as fast as their reader takes them, so
 * memory stays flat for any size and a slow reader costs nothing. Paths
 * resolve beneath the work dir (openat2 RESOLVE_BENEATH): neither ".." nor
 * a symbolic link leads a download outside it. Each download that sends
 * leaves its step. Loop thread only. */
#ifndef BOXD_DOWNLOADS_H
#define BOXD_DOWNLOADS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "failure.h"

struct boxd_config;
struct event_base;

/* Downloads come from `config`'s work dir (kept, not copied); a cancelled
 * one ends on `base`. */
void downloads_init(struct event_base *base, const struct boxd_config *config);

struct download;

/* Opens `path` (absolute under the work dir, or relative to it). NULL with
 * a failure and a sentence when it leads outside the work dir, is the work
 * dir itself or neither a regular file nor a folder (bad_request), names
 * nothing (not_found) or cannot be opened (internal). */
struct download *download_open(const char *path, enum failure *failure, char *message,
			       size_t message_size);
/* A folder (a tar.gz will follow), else a regular file. */
bool download_is_folder(const struct download *download);
/* A regular file's size, as opened. */
off_t download_size(const struct download *download);
/* A regular file's strong validator, as a quoted ETag: its device, inode,
 * size and modification time (ns), in hex. Any write changes the last
 * two; a file replaced by a rename changes the inode. */
void download_etag(const struct download *download, char *etag, size_t etag_size);
/* Frees a download that was opened and not started. */
void download_close(struct download *download);

/* Where a download's bytes go (a route's answer); `arg` is passed to each. */
struct download_sink {
	/* A folder's first bytes are ready: its answer may start. (A file's
	 * starts before download_file_start.) */
	void (*started)(void *arg);
	/* Whether the reader takes more now; when not, the download waits for
	 * download_resume(). */
	bool (*ready)(void *arg);
	void (*write)(void *arg, const void *bytes, size_t length);
	/* Once, at the end, after which the download is freed: `failed` is
	 * NULL when the bytes went (all of them, or as many as there were: a
	 * file that shrank, or a folder whose archive failed midway, ends
	 * short), else nothing was sent and it says why (an internal
	 * failure). */
	void (*end)(void *arg, const char *failed);
};

/* Sends bytes `first` to `last` (inclusive, within the size) of a file.
 * `sink` is kept, not copied; end() may run before this returns. */
void download_file_start(struct download *download, off_t first, off_t last,
			 const struct download_sink *sink, void *arg);
/* Starts a folder's archive. False, the download freed, with a sentence
 * (an internal failure) when the worker could not start. */
bool download_folder_start(struct download *download, const struct download_sink *sink, void *arg,
			   char *message, size_t message_size);
/* The reader takes more again. */
void download_resume(struct download *download);
/* The reader left: the download stops and ends (its step says how much
 * went); end() runs later, never from within this call. */
void download_cancel(struct download *download);

#endif
