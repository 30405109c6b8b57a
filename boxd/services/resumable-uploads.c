/* resumable-uploads.c: the store of resumable uploads, in files under
 * WORK/.sbx/uploads, and their finish. Pieces are written on the event loop
 * (into the page cache): the body belongs to the connection, and handing it
 * to a thread would mean copying it first. */
#include "resumable-uploads.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "random-id.h"
#include "xalloc.h"

#define STALE_SECONDS (24 * 3600)
#define BUSY_LIMIT 16

static const char *work_dir; /* given at resumable_uploads_init */

void resumable_uploads_init(const struct boxd_config *config)
{
	work_dir = config->work_dir;
}

/* Ids with a piece being written or an extraction running. */
static char busy_ids[BUSY_LIMIT][RESUMABLE_ID_LENGTH + 1];

static bool busy_claim(const char *id)
{
	int free_slot = -1;
	for (int i = 0; i < BUSY_LIMIT; i++) {
		if (strcmp(busy_ids[i], id) == 0)
			return false;
		if (!busy_ids[i][0] && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0)
		return false;
	strcpy(busy_ids[free_slot], id);
	return true;
}

static void busy_release(const char *id)
{
	for (int i = 0; i < BUSY_LIMIT; i++)
		if (strcmp(busy_ids[i], id) == 0)
			busy_ids[i][0] = '\0';
}

static char *spool_file(const char *id, const char *suffix)
{
	return xasprintf("%s/.sbx/uploads/%s.%s", work_dir, id, suffix);
}

static bool refuse(struct resumable_failure *why, enum failure failure, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool refuse(struct resumable_failure *why, enum failure failure, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	vsnprintf(why->message, sizeof why->message, fmt, args);
	va_end(args);
	why->failure = failure;
	why->offset = -1;
	return false;
}

/* Writing failed with `error`: disk_full or internal, `what` and why. */
static bool refuse_write(struct resumable_failure *why, int error, const char *what)
{
	why->failure = failure_of_write(error, what, why->message, sizeof why->message);
	why->offset = -1;
	return false;
}

bool resumable_known(const char *id, char *why, size_t why_size)
{
	bool valid = id && strlen(id) == RESUMABLE_ID_LENGTH;
	for (int i = 0; valid && i < RESUMABLE_ID_LENGTH; i++)
		valid = (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f');
	char *part = valid ? spool_file(id, "part") : NULL;
	bool exists = part && access(part, F_OK) == 0;
	free(part);
	if (!exists)
		snprintf(why, why_size, "no upload %s", valid ? id : "with that id");
	return exists;
}

static void remove_stale(const char *dir_path)
{
	DIR *dir = opendir(dir_path);
	if (!dir)
		return;
	time_t now = time(NULL);
	struct dirent *entry;
	while ((entry = readdir(dir))) {
		struct stat st;
		if (entry->d_name[0] != '.' && fstatat(dirfd(dir), entry->d_name, &st, 0) == 0 &&
		    now - st.st_mtime > STALE_SECONDS)
			unlinkat(dirfd(dir), entry->d_name, 0);
	}
	closedir(dir);
}

/* WORK/.sbx/uploads, made when missing (its stale uploads removed); false
 * with errno set when it cannot be made. */
static bool prepare_spool(void)
{
	char *sbx = xasprintf("%s/.sbx", work_dir);
	char *dir = xasprintf("%s/.sbx/uploads", work_dir);
	bool ok = (mkdir(sbx, 0755) == 0 || errno == EEXIST) &&
		  (mkdir(dir, 0700) == 0 || errno == EEXIST);
	int error = errno;
	if (ok)
		remove_stale(dir);
	free(sbx);
	free(dir);
	errno = error;
	return ok;
}

bool resumable_create(const char *dest, char id[RESUMABLE_ID_LENGTH + 1],
		      struct resumable_failure *why)
{
	char what[512];
	if (!prepare_spool()) {
		snprintf(what, sizeof what, "cannot make %s/.sbx/uploads", work_dir);
		return refuse_write(why, errno, what);
	}
	random_hex(id, RESUMABLE_ID_LENGTH / 2);
	char *dest_path = spool_file(id, "dest"), *part_path = spool_file(id, "part");
	FILE *file = fopen(dest_path, "wxe");
	int part = open(part_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	bool ok = file && part >= 0 && fputs(dest, file) >= 0;
	if (file && fclose(file) != 0)
		ok = false;
	int error = errno;
	if (part >= 0)
		close(part);
	if (!ok) {
		unlink(dest_path);
		unlink(part_path);
		snprintf(what, sizeof what, "cannot make the upload's files under %s/.sbx/uploads",
			 work_dir);
		refuse_write(why, error, what);
	}
	free(dest_path);
	free(part_path);
	return ok;
}

bool resumable_offset(const char *id, long long *offset)
{
	char *part_path = spool_file(id, "part");
	struct stat st;
	int status = stat(part_path, &st);
	free(part_path);
	if (status < 0)
		return false;
	*offset = st.st_size;
	return true;
}

struct resumable_piece {
	char id[RESUMABLE_ID_LENGTH + 1];
	char *path;
	off_t offset;
};

/* Undoes a claim that led nowhere. */
static struct resumable_piece *unclaim(const char *id, char *part_path, int *fd)
{
	busy_release(id);
	free(part_path);
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return NULL;
}

struct resumable_piece *resumable_piece_start(const char *id, long long offset, int *fd,
					      struct resumable_failure *why)
{
	*fd = -1;
	if (!busy_claim(id)) {
		refuse(why, FAILURE_CONFLICT,
		       "upload %s is busy with another piece; retry when it is done", id);
		return NULL;
	}
	char *part_path = spool_file(id, "part");
	*fd = open(part_path, O_WRONLY | O_APPEND | O_CLOEXEC);
	struct stat st;
	if (*fd < 0 || fstat(*fd, &st) < 0) {
		refuse(why, FAILURE_INTERNAL, "cannot open upload %s: %s", id, strerror(errno));
		return unclaim(id, part_path, fd);
	}
	if (st.st_size != offset) {
		refuse(why, FAILURE_CONFLICT,
		       "upload %s has %lld bytes; send the piece at Upload-Offset: %lld", id,
		       (long long)st.st_size, (long long)st.st_size);
		why->offset = st.st_size;
		return unclaim(id, part_path, fd);
	}
	struct resumable_piece *piece = xcalloc(1, sizeof *piece);
	strcpy(piece->id, id);
	piece->path = part_path;
	piece->offset = offset;
	return piece;
}

bool resumable_piece_end(struct resumable_piece *piece, bool complete, int error, long long *offset,
			 struct resumable_failure *why)
{
	if (!complete) {
		/* Cut short (the client left), a failed write (disk full) or a
		 * malformed body: nothing half-done, the offset stays where it was. */
		(void)!truncate(piece->path, piece->offset);
		if (error == EPROTO)
			return refuse(why, FAILURE_BAD_REQUEST, "cannot store the piece: %s",
				      strerror(error));
		char what[512];
		snprintf(what, sizeof what, "cannot store the piece in %s", piece->path);
		return refuse_write(why, error, what);
	}
	struct stat st;
	*offset = stat(piece->path, &st) == 0 ? st.st_size : piece->offset;
	return true;
}

void resumable_piece_close(struct resumable_piece *piece)
{
	busy_release(piece->id);
	free(piece->path);
	free(piece);
}

static void remove_upload(const char *id)
{
	char *dest_path = spool_file(id, "dest");
	char *part_path = spool_file(id, "part");
	unlink(part_path);
	unlink(dest_path);
	free(dest_path);
	free(part_path);
}

/* A finish while its extraction runs: the upload's files go once it has
 * succeeded. */
struct finishing {
	char id[RESUMABLE_ID_LENGTH + 1];
	upload_done_fn done;
	void *arg;
};

static void finished(void *arg, const struct upload_result *result)
{
	struct finishing *finishing = arg;
	finishing->done(finishing->arg, result);
	busy_release(finishing->id);
	if (result->ok)
		remove_upload(finishing->id);
	free(finishing);
}

/* Reads the upload's dest into `dest` and opens its `.part` file; -1 when
 * either is lost. */
static int open_finish(const char *id, char *dest, size_t dest_size)
{
	char *dest_path = spool_file(id, "dest"), *part_path = spool_file(id, "part");
	FILE *file = fopen(dest_path, "re");
	bool have_dest = file && !ferror(file);
	if (file) {
		dest[fread(dest, 1, dest_size - 1, file)] = '\0';
		have_dest = !ferror(file);
		fclose(file);
	}
	int fd = open(part_path, O_RDONLY | O_CLOEXEC);
	free(dest_path);
	free(part_path);
	if (!have_dest && fd >= 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

struct archive_call *resumable_finish(const char *id, upload_done_fn done, void *arg)
{
	char message[256];
	struct upload_result refused = {.failure = FAILURE_CONFLICT, .message = message};
	if (!busy_claim(id)) {
		snprintf(message, sizeof message,
			 "upload %s is busy; retry when its piece is stored", id);
		done(arg, &refused);
		return NULL;
	}
	char dest[4096] = "";
	int fd = open_finish(id, dest, sizeof dest);
	if (fd < 0) {
		busy_release(id);
		snprintf(message, sizeof message, "upload %s lost its files under .sbx/uploads",
			 id);
		refused.failure = FAILURE_INTERNAL;
		done(arg, &refused);
		return NULL;
	}
	struct finishing *finishing = xcalloc(1, sizeof *finishing);
	strcpy(finishing->id, id);
	finishing->done = done;
	finishing->arg = arg;
	return upload_extract(dest, fd, finished, finishing);
}

bool resumable_delete(const char *id, struct resumable_failure *why)
{
	if (!busy_claim(id))
		return refuse(why, FAILURE_CONFLICT, "upload %s is busy; retry when it is done",
			      id);
	remove_upload(id);
	busy_release(id);
	return true;
}
