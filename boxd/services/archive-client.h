/* archive-client.h: boxd's side of boxd-archive, the sandboxed worker for
 * tar.gz and sync hashing, and the only code in boxd that speaks its
 * protocol (the worker's argv, its stdin and stdout, its one JSON line, its
 * exit status; boxd/archive/archive-worker.c is the other side). Callers
 * get typed calls, and results as C values or a failure (failure.h) with a
 * sentence; never the worker's text or an HTTP status.
 *
 * Each call is one worker process, watched with a pidfd (boxd needs no
 * SIGCHLD handling of its own); its input is a file descriptor the caller
 * hands over (a pipe fed with a request's body, or a file). Everything runs
 * on the event loop; call from the loop thread only. */
#ifndef BOXD_ARCHIVE_CLIENT_H
#define BOXD_ARCHIVE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "failure.h"

struct boxd_config;
struct event_base;

/* Calls watch their pipes and their worker's exit on `base`. The worker
 * works in `config`'s work dir, as its box user (`user`, else root), with
 * the hash cache in its run dir (RUN_DIR/hash-cache). `config` is kept,
 * not copied. */
void archive_client_init(struct event_base *base, const struct boxd_config *config);

/* One running call: a handle to cancel or pace it, valid until its done()
 * or end() has run. */
struct archive_call;

/* The caller's side is going away (its client left): the worker is killed.
 * done() or end() still runs, later, never from within this call; a
 * stream's data() no longer does. */
void archive_call_cancel(struct archive_call *call);

/* ---- diff: which manifest entries differ (POST /v1/sync/diff) ---- */

struct archive_diff_answer {
	bool ok;
	/* ok: the contract's answer, {"changed":[hex paths...]} or
	 * {"all":true}, as the worker wrote it: passed on, never parsed and
	 * printed again (a long list would cost boxd its memory twice). */
	const char *json;
	size_t length;
	/* !ok: what failed (bad_request: the manifest or dest; internal) and
	 * a sentence saying why. */
	enum failure failure;
	const char *message;
};
/* The answer is valid during the call only. */
typedef void (*archive_diff_done_fn)(void *arg, const struct archive_diff_answer *answer);

/* Compares the manifest read from `manifest_fd` (taken over) with what is
 * under WORK/<dest> (`dest` relative to the work dir, "" for the work dir
 * itself); more than `limit` differing entries answer {"all":true}. The
 * worker hashes on its threads and keeps the hash cache. done() runs once,
 * on the loop. Returns the call, or NULL when the worker could not start:
 * done() has run then, before this returns. */
struct archive_call *archive_client_diff(const char *dest, unsigned long limit, int manifest_fd,
					 archive_diff_done_fn done, void *arg);

/* ---- extract: a tar.gz into a folder (sync upload, resumable finish) ---- */

struct archive_extract_answer {
	bool ok;
	uint64_t files; /* ok: regular files, symbolic links and hard links */
	uint64_t bytes; /* ok: regular file content written */
	/* !ok: bad_request (the archive or dest is refused), disk_full (the
	 * message names the entry), or internal; and why. */
	enum failure failure;
	const char *message;
	/* !ok: false when the worker ended without an answer (killed, crashed,
	 * never started); `message` then says how it ended. */
	bool answered;
};
typedef void (*archive_extract_done_fn)(void *arg, const struct archive_extract_answer *answer);

/* Extracts the tar.gz read from `input_fd` (taken over: a pipe fed with a
 * request's body, or a finished resumable upload's file) into WORK/<dest>
 * (`dest` as for a diff), as the box user; then the hash cache learns the
 * files it wrote (docs/sync.md). done() and the result as for a diff. */
struct archive_call *archive_client_extract(const char *dest, int input_fd,
					    archive_extract_done_fn done, void *arg);

/* ---- sha256: a file's SHA-256 (GET /v1/files/stat, PUT /v1/files) ---- */

struct archive_sha256_answer {
	bool ok;
	const char *hex; /* ok: 64 lower-case hex digits */
	uint64_t size;   /* ok: the bytes hashed */
	enum failure failure;
	const char *message; /* !ok */
};
typedef void (*archive_sha256_done_fn)(void *arg, const struct archive_sha256_answer *answer);

/* Hashes what `input_fd` (taken over: a regular file, read from its
 * offset to its end) holds, in the worker: a 1 GiB file costs the loop
 * nothing. done() and the result as for a diff. */
struct archive_call *archive_client_sha256(int input_fd, archive_sha256_done_fn done, void *arg);

/* ---- create: a folder as a tar.gz, streamed (GET /v1/files) ---- */

struct archive_stream_handlers {
	/* A piece of the archive, as the worker made it (valid during the
	 * call only). */
	void (*data)(void *arg, const void *bytes, size_t length);
	/* Once, at the end, after which the call is freed: `complete` when
	 * the worker ended cleanly, else `why` says what failed (what was
	 * streamed is then a truncated gzip). */
	void (*end)(void *arg, bool complete, const char *why);
};

/* Streams WORK/<path> (a folder; `path` relative to the work dir, not "")
 * as a pax tar.gz at gzip level 1 with the folder as its top entry;
 * symbolic links are stored as links, never followed. `handlers` is kept,
 * not copied. NULL with a sentence in `why` when the worker could not
 * start (end() does not run then). */
struct archive_call *archive_client_create(const char *path,
					   const struct archive_stream_handlers *handlers,
					   void *arg, char *why, size_t why_size);
/* A stream's reader is behind: boxd stops reading the worker's output, and
 * the worker blocks on its full pipe, until archive_call_resume(). Ignored
 * once the call is cancelled: its output is then read to the end. */
void archive_call_pause(struct archive_call *call);
void archive_call_resume(struct archive_call *call);

#endif
