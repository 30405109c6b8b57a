/* api-uploads.c: resumable uploads (API.md, "Sync and files"), for archives
 * of any size: POST /v1/uploads?dest=DIR, PUT /v1/uploads/{id} with
 * Upload-Offset, HEAD /v1/uploads/{id}, POST /v1/uploads/{id}/finish, and
 * DELETE /v1/uploads/{id} to give one up.
 *
 * Pieces are streamed from the socket into WORK/.sbx/uploads/<id>.part on
 * disk as they arrive (never held in memory), of any size, beside <id>.dest naming the
 * destination; the state is those two files, so an upload survives a boxd
 * restart. Finish hands the file to the archive worker as its stdin.
 * Uploads untouched for a day are removed when a new one starts. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "router.h"
#include "api-archive.h"
#include "config.h"
#include "random-id.h"
#include "upload.h"
#include "xalloc.h"

#define ID_LENGTH 32
#define STALE_SECONDS (24 * 3600)
#define BUSY_LIMIT 16

/* Ids with a piece being written or an extraction running. */
static char busy_ids[BUSY_LIMIT][ID_LENGTH + 1];

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

static char *spool_dir(const char *work_dir)
{
	return xasprintf("%s/.sbx/uploads", work_dir);
}

static char *spool_file(const char *work_dir, const char *id, const char *suffix)
{
	return xasprintf("%s/.sbx/uploads/%s.%s", work_dir, id, suffix);
}

/* The {id} segment, checked (32 hex digits), or NULL after answering. */
static const char *upload_id(struct api_request *req)
{
	const char *id = api_param(req, 0);
	bool valid = id && strlen(id) == ID_LENGTH;
	for (int i = 0; valid && i < ID_LENGTH; i++)
		valid = (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f');
	char *part = valid ? spool_file(api_config()->work_dir, id, "part") : NULL;
	bool exists = part && access(part, F_OK) == 0;
	free(part);
	if (!exists) {
		api_reply_not_found(req, "no upload %s: start one with POST /v1/uploads?dest=DIR",
				    valid ? id : "with that id");
		return NULL;
	}
	return id;
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
static bool prepare_spool(const char *work_dir)
{
	char *sbx = xasprintf("%s/.sbx", work_dir);
	char *dir = spool_dir(work_dir);
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

static void handle_create(struct api_request *req)
{
	char *dest = api_archive_dest(req);
	if (!dest)
		return;
	const char *work = api_config()->work_dir;
	if (!prepare_spool(work)) {
		api_reply_write_failed(req, errno, "cannot make %s/.sbx/uploads", work);
		free(dest);
		return;
	}
	char id[ID_LENGTH + 1];
	random_hex(id, ID_LENGTH / 2);
	char *dest_path = spool_file(work, id, "dest"), *part_path = spool_file(work, id, "part");
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
		api_reply_write_failed(req, error, "cannot make the upload's files under %s/.sbx/uploads",
				       work);
	} else {
		cJSON *answer = cJSON_CreateObject();
		cJSON_AddStringToObject(answer, "uploadId", id);
		api_reply_json(req, 200, answer);
	}
	free(dest_path);
	free(part_path);
	free(dest);
}

/* A piece being written: the connection streams the body straight into
 * the .part file at its offset, at the pace the socket brings it. */
struct piece {
	char id[ID_LENGTH + 1];
	char *path;
	off_t offset;
};

static void piece_release(void *data)
{
	struct piece *piece = data;
	busy_release(piece->id);
	free(piece->path);
	free(piece);
}

static void piece_written(struct api_request *req, bool complete, int error)
{
	struct piece *piece = api_data(req);
	if (!complete) {
		/* Cut short (the client left), a failed write (disk full) or a
		 * malformed body: nothing half-done, the offset stays where it was. */
		(void)!truncate(piece->path, piece->offset);
		if (error == EPROTO)
			api_reply_bad_request(req, "cannot store the piece: %s", strerror(error));
		else
			api_reply_write_failed(req, error, "cannot store the piece in %s", piece->path);
		return;
	}
	struct stat st;
	bool sized = stat(piece->path, &st) == 0;
	cJSON *answer = cJSON_CreateObject();
	cJSON_AddNumberToObject(answer, "offset", sized ? (double)st.st_size : (double)piece->offset);
	api_reply_json(req, 200, answer);
}

static void handle_put(struct api_request *req)
{
	const char *id = upload_id(req);
	if (!id)
		return;
	const char *offset_text = api_header(req, "Upload-Offset");
	char *end = NULL;
	long long offset = offset_text ? strtoll(offset_text, &end, 10) : -1;
	if (!offset_text || end == offset_text || *end || offset < 0) {
		api_reply_bad_request(req, "the Upload-Offset header must give the byte offset of this piece");
		return;
	}
	if (!busy_claim(id)) {
		api_reply_failure(req, FAILURE_CONFLICT, "upload %s is busy with another piece; retry when it is done", id);
		return;
	}
	char *part_path = spool_file(api_config()->work_dir, id, "part");
	int fd = open(part_path, O_WRONLY | O_APPEND | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		busy_release(id);
		free(part_path);
		if (fd >= 0)
			close(fd);
		api_reply_failure(req, FAILURE_INTERNAL, "cannot open upload %s: %s", id, strerror(errno));
		return;
	}
	if (st.st_size != offset) {
		busy_release(id);
		free(part_path);
		close(fd);
		char header[32];
		snprintf(header, sizeof header, "%lld", (long long)st.st_size);
		api_add_header(req, "Upload-Offset", header);
		api_reply_failure(req, FAILURE_CONFLICT, "upload %s has %lld bytes; send the piece at Upload-Offset: %lld",
				id, (long long)st.st_size, (long long)st.st_size);
		return;
	}
	struct piece *piece = xcalloc(1, sizeof *piece);
	strcpy(piece->id, id);
	piece->path = part_path;
	piece->offset = offset;
	api_set_data(req, piece, piece_release);
	api_body_to_fd(req, fd, piece_written);
}

static void handle_head(struct api_request *req)
{
	const char *id = upload_id(req);
	if (!id)
		return;
	char *part_path = spool_file(api_config()->work_dir, id, "part");
	struct stat st;
	int status = stat(part_path, &st);
	free(part_path);
	if (status < 0) {
		api_reply_not_found(req, "no upload %s", id);
		return;
	}
	char header[32];
	snprintf(header, sizeof header, "%lld", (long long)st.st_size);
	api_add_header(req, "Upload-Offset", header);
	api_add_header(req, "Cache-Control", "no-store");
	api_reply_bytes(req, 200, "application/octet-stream", "", 0);
}

static void remove_upload(const char *work_dir, const char *id)
{
	char *dest_path = spool_file(work_dir, id, "dest");
	char *part_path = spool_file(work_dir, id, "part");
	unlink(part_path);
	unlink(dest_path);
	free(dest_path);
	free(part_path);
}

/* A finished upload's files go once extracted. */
struct finishing {
	struct api_request *req;
	const char *work_dir; /* boxd's config: lives as long as boxd */
	char id[ID_LENGTH + 1];
};

static void finish_done(void *arg, const struct upload_result *result)
{
	struct finishing *finishing = arg;
	api_archive_upload_answered(finishing->req, result);
	busy_release(finishing->id);
	if (result->ok)
		remove_upload(finishing->work_dir, finishing->id);
	free(finishing);
}

static void handle_finish(struct api_request *req)
{
	const char *id = upload_id(req);
	if (!id)
		return;
	if (!busy_claim(id)) {
		api_reply_failure(req, FAILURE_CONFLICT, "upload %s is busy; retry when its piece is stored", id);
		return;
	}
	const char *work = api_config()->work_dir;
	char *dest_path = spool_file(work, id, "dest"), *part_path = spool_file(work, id, "part");
	char dest[4096] = "";
	FILE *file = fopen(dest_path, "re");
	bool have_dest = file && !ferror(file);
	if (file) {
		dest[fread(dest, 1, sizeof dest - 1, file)] = '\0';
		have_dest = !ferror(file);
		fclose(file);
	}
	int fd = open(part_path, O_RDONLY | O_CLOEXEC);
	free(dest_path);
	free(part_path);
	if (!have_dest || fd < 0) {
		busy_release(id);
		if (fd >= 0)
			close(fd);
		api_reply_failure(req, FAILURE_INTERNAL, "upload %s lost its files under .sbx/uploads", id);
		return;
	}
	struct finishing *finishing = xcalloc(1, sizeof *finishing);
	finishing->req = req;
	finishing->work_dir = api_config()->work_dir;
	strcpy(finishing->id, id);
	api_archive_watch(req, upload_extract(dest, fd, finish_done, finishing));
}

static void handle_delete(struct api_request *req)
{
	const char *id = upload_id(req);
	if (!id)
		return;
	if (!busy_claim(id)) {
		api_reply_failure(req, FAILURE_CONFLICT, "upload %s is busy; retry when it is done", id);
		return;
	}
	remove_upload(api_config()->work_dir, id);
	busy_release(id);
	cJSON *answer = cJSON_CreateObject();
	cJSON_AddBoolToObject(answer, "ok", true);
	api_reply_json(req, 200, answer);
}

const struct api_route api_uploads_routes[] = {
	{"POST", "/v1/uploads", API_REFUSED_WHILE_LOCKED | API_IDEMPOTENT, 0, handle_create},
	{"PUT", "/v1/uploads/{}", API_REFUSED_WHILE_LOCKED | API_IDEMPOTENT | API_STREAM_BODY, 0,
	 handle_put},
	{"HEAD", "/v1/uploads/{}", 0, 0, handle_head},
	{"POST", "/v1/uploads/{}/finish", API_REFUSED_WHILE_LOCKED | API_IDEMPOTENT, 0, handle_finish},
	{"DELETE", "/v1/uploads/{}", API_IDEMPOTENT, 0, handle_delete},
	{0},
};
