/* request-ids.h: the X-Request-Id memory that makes a retried call safe.
 *
 * The first call with an id runs; a repeat while it runs waits for the same
 * answer; a repeat after it ended gets the stored answer again. Nothing runs
 * twice. At least the last 256 ids are kept for at least 15 minutes (the
 * contract); older ones go when the memory grows past that, and pending
 * entries are never dropped. The router (api.c) is the only user. */
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

struct request_id_entry {
	char *id;
	char *target;        /* "METHOD path", so one id can't replay another call */
	bool done;
	int64_t finished_ms; /* monotonic */
	int status;
	char *content_type;
	char *body;
	size_t body_length;
	void *waiters;       /* the router's list of requests attached to it */
	struct request_id_entry *older, *newer;
};

/* 1 to 64 characters of [A-Za-z0-9_-]. */
bool request_ids_valid(const char *id);
struct request_id_entry *request_ids_find(const char *id);
/* Records a new pending entry (the id must not be known). */
struct request_id_entry *request_ids_begin(const char *id, const char *target, int64_t now_ms);
/* Stores the answer; the entry may be forgotten from now on. */
void request_ids_finish(struct request_id_entry *entry, int status, const char *content_type,
			const void *body, size_t body_length, int64_t now_ms);
/* Drops a pending entry whose call never answered (its request was abandoned). */
void request_ids_abandon(struct request_id_entry *entry);
size_t request_ids_count(void);
void request_ids_clear(void);

#endif
