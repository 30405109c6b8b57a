/* sync.h: which manifest entries differ from what is under a destination
 * (POST /v1/sync/diff). Pure engine: no event loop, no HTTP. It blocks while
 * it hashes, on threads of its own, in the boxd-archive worker
 * (archive-worker.c), never in boxd. */
#ifndef BOXD_SYNC_H
#define BOXD_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

struct hash_cache;

enum sync_status {
	SYNC_OK,          /* answer holds {"changed": [...]} or {"all": true} */
	SYNC_BAD_REQUEST, /* message says which line or why */
	SYNC_FAILED,      /* message says what broke */
};

struct sync_diff_result {
	enum sync_status status;
	cJSON *answer; /* caller frees; NULL unless SYNC_OK */
	char message[256];
	unsigned long entries, hashed, cache_hits; /* for steps and benchmarks */
};

/* Lets the diff hash big files from mappings of the page cache, with a
 * SIGBUS handler for files truncated meanwhile. Process-wide: for the
 * diff worker only, never for boxd. */
void sync_map_files(void);

/* Makes the diff's threads read with this file-system identity (the box
 * user's): needs a root process whose saved uid and gid are these. */
void sync_read_as(uid_t uid, gid_t gid);

/* Compares `manifest` (API.md's format, `length` bytes) with the files under
 * `dest_fd` (entries' directories resolve through the box's own links,
 * wherever they lead; a dest_fd that is not a directory makes every entry
 * differ). A negative `dest_fd` means dest does not exist (answer all).
 * More than `limit` differing entries answer {"all": true}. `cache` may be
 * NULL. Uses up to `threads` threads (the caller's included). */
void sync_diff_run(int dest_fd, const char *manifest, size_t length, unsigned long limit,
		   struct hash_cache *cache, int threads, struct sync_diff_result *result);

/* Hashes the regular files `paths` (relative to `dest_fd`) into `cache`, as
 * a diff would: after an upload, so the next diff finds them. The caller
 * waits until the clock has moved past their last change first, or the
 * records are racy and of no use. */
void sync_remember(int dest_fd, char *const *paths, size_t count, struct hash_cache *cache);

#endif
