/* request-ids.h: the X-Request-Id memory that makes a retried call safe.
 *
 * The first call with an id runs; a repeat while it runs waits for the same
 * answer; a repeat after it ended gets the stored answer again. Nothing runs
 * twice, across restarts and crashes of boxd too: every entry is also a file
 * in a store under the run dir (request_ids_open), read back at start.
 *
 * At least the last 256 ids are kept for at least 15 minutes (the contract);
 * older ones go when the memory grows past that, and pending entries are
 * never dropped. Stored answers are bounded in bytes as well (the run dir is
 * RAM in a box): past the bound the oldest answers' bodies go, and a repeat
 * of such an id is told to fetch the result by the resource it names. The
 * router (http/router.c) is the only user. */
#ifndef BOXD_REQUEST_IDS_H
#define BOXD_REQUEST_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REQUEST_IDS_KEEP_COUNT 256
#define REQUEST_IDS_KEEP_MS (15 * 60 * 1000)
/* Past this many, the oldest answered entries go even if young, so memory
 * stays bounded whatever a caller does. */
#define REQUEST_IDS_HARD_LIMIT 2048
/* Answer bytes kept in all; a foreground exec's answer alone may be 128 MiB. */
#define REQUEST_IDS_KEEP_BYTES (32u << 20)

struct request_id_entry {
	char *id;
	char *target;   /* "METHOD path", so one id can't replay another call */
	char *resource; /* what the call made (a command id), or NULL */
	bool done;
	bool orphaned;       /* pending when an earlier boxd ended: it never answered */
	bool body_dropped;   /* done, but the answer's body went (byte bound) */
	int64_t started_at;  /* wall clock, ms: the store's order */
	int64_t finished_ms; /* monotonic */
	int status;
	char *content_type;
	char *body; /* NULL when the answer lives in the store only */
	size_t body_length;
	void *waiters; /* the router's list of requests attached to it */
	struct request_id_entry *older, *newer;
};

/* 1 to 64 characters of [A-Za-z0-9_-]. */
bool request_ids_valid(const char *id);
/* Keeps every entry in `dir` (made 0700 if missing) from now on, and loads
 * the entries an earlier boxd left there: answered ones replay as before;
 * pending ones come back `orphaned`. False (logged) when the store cannot
 * be used: the memory then lives in this process only. */
bool request_ids_open(const char *dir, int64_t now_ms);
struct request_id_entry *request_ids_find(const char *id);
/* Records a new pending entry (the id must not be known). */
struct request_id_entry *request_ids_begin(const char *id, const char *target, int64_t now_ms);
/* Names what the call made before it has an answer (a command id), so a
 * repeat after a crash of boxd can attach to it instead of running again. */
void request_ids_bind(struct request_id_entry *entry, const char *resource);
/* An orphaned entry is being run again (it made nothing to attach to). */
void request_ids_restart(struct request_id_entry *entry);
/* Stores the answer; the entry may be forgotten from now on. */
void request_ids_finish(struct request_id_entry *entry, int status, const char *content_type,
			const void *body, size_t body_length, int64_t now_ms);
/* The stored answer's body (caller frees), or NULL when it was dropped or
 * cannot be read back. */
char *request_ids_body(const struct request_id_entry *entry, size_t *length);
/* Drops a pending entry whose call never answered (its request was abandoned). */
void request_ids_abandon(struct request_id_entry *entry);
size_t request_ids_count(void);
/* Forgets every entry in memory; the store is left as it is (a restart). */
void request_ids_clear(void);

#endif
