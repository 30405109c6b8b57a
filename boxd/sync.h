/* sync.h: which manifest entries differ from what is under a destination
 * (POST /v1/sync/diff). Pure engine: no event loop, no HTTP. It blocks while
 * it hashes, so boxd runs it on a worker thread (api-sync.c). */
#ifndef BOXD_SYNC_H
#define BOXD_SYNC_H

#include <stdbool.h>
#include <stddef.h>

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

/* Compares `manifest` (API.md's format, `length` bytes) with the files under
 * `dest_fd`. A negative `dest_fd` means dest does not exist (answer all).
 * More than `limit` differing entries answer {"all": true}. `cache` may be
 * NULL. Uses up to `threads` threads (the caller's included). */
void sync_diff_run(int dest_fd, const char *manifest, size_t length, unsigned long limit,
		   struct hash_cache *cache, int threads, struct sync_diff_result *result);

/* Opens `dest` (relative to `work_fd`, or an absolute path under
 * `work_dir`) as a directory without leaving the work dir, even through
 * symbolic links. Returns the fd, or -1 with errno: ENOENT/ENOTDIR when it
 * is not there, EXDEV when it leads out, EINVAL for a bad name (with a
 * reason in `why`). "" and "." name the work dir itself. */
int sync_open_dest(int work_fd, const char *work_dir, const char *dest, const char **why);

/* Resolves `dest` as sync_open_dest does into a normalized relative path
 * ("" for the work dir); NULL with `why` when it leaves the work dir. */
char *sync_dest_relative(const char *work_dir, const char *dest, const char **why);

#endif
