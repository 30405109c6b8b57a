/* resumable-uploads.h: resumable uploads (POST /v1/uploads and the rest,
 * API.md "Sync and files"), for archives sent in pieces over an unreliable
 * link: the store of their ids, `.part` files and offsets, and the finish
 * that extracts one (upload.h).
 *
 * An upload's state is two files under WORK/.sbx/uploads/, `<id>.part`
 * (the bytes so far) and `<id>.dest` (where it goes), and nothing else, so
 * an upload survives a boxd restart. A piece is written straight into the
 * `.part` file by whoever streams it (the caller gets the fd); a piece cut
 * short is cut back to its offset. One piece, finish or delete per upload
 * at a time. Uploads untouched for a day are removed when a new one
 * starts. Loop thread only. */
#ifndef BOXD_RESUMABLE_UPLOADS_H
#define BOXD_RESUMABLE_UPLOADS_H

#include <stdbool.h>
#include <stddef.h>

#include "failure.h"
#include "upload.h"

#define RESUMABLE_ID_LENGTH 32 /* lower-case hex digits */

struct archive_call;
struct boxd_config;

/* Uploads live in `config`'s work dir (kept, not copied). */
void resumable_uploads_init(const struct boxd_config *config);

/* Why a call was refused: a failure, its sentence, and for a piece at the
 * wrong offset (conflict) the offset to send it at, else -1. */
struct resumable_failure {
	enum failure failure;
	char message[1024];
	long long offset;
};

/* True when `id` names an upload that is there; else `why` gets "no upload
 * ID" (or "no upload with that id" when it is not an id at all). */
bool resumable_known(const char *id, char *why, size_t why_size);

/* Starts an upload into `dest` (relative to the work dir); its id in `id`.
 * False with `why` when its files cannot be made (disk_full or internal). */
bool resumable_create(const char *dest, char id[RESUMABLE_ID_LENGTH + 1],
		      struct resumable_failure *why);

/* The bytes stored so far, in `offset`; false when the upload is gone. */
bool resumable_offset(const char *id, long long *offset);

/* A piece being written. */
struct resumable_piece;
/* Claims upload `id` for a piece starting at `offset`: the piece, and in
 * `fd` its `.part` file open for appending, for the piece's bytes to be
 * written into (the caller takes the fd over). NULL with `why` when the
 * upload is busy or the offset is not its size (conflict, `why->offset`
 * set), or the file cannot be opened. */
struct resumable_piece *resumable_piece_start(const char *id, long long offset, int *fd,
					      struct resumable_failure *why);
/* The piece's bytes stopped coming: `complete`, or cut short with `error`
 * (an errno: EPROTO when they arrived malformed, else why they could not be
 * written or came no more). Complete: true, the upload's new size in
 * `offset`. Else the `.part` file is cut back to where the piece started,
 * and false with `why`. */
bool resumable_piece_end(struct resumable_piece *piece, bool complete, int error, long long *offset,
			 struct resumable_failure *why);
/* Releases the piece (after its end, or instead): the upload may take its
 * next piece. */
void resumable_piece_close(struct resumable_piece *piece);

/* Extracts upload `id` into its dest (upload_extract) and, once that has
 * succeeded, removes it. done() runs once: before this returns when the
 * upload is busy (conflict) or lost its files (internal), else on the loop
 * with the extraction's result. Returns the worker's call (for
 * archive_call_cancel), or NULL when done() has run already. */
struct archive_call *resumable_finish(const char *id, upload_done_fn done, void *arg);

/* Gives upload `id` up, its files removed. False with `why` (conflict)
 * while a piece or a finish runs. */
bool resumable_delete(const char *id, struct resumable_failure *why);

#endif
