/* files-put.c: one file written whole or not at all (PUT /v1/files). The
 * bytes go to a temporary file beside the target, made by the box user
 * with mode 0600 (nobody reads it half-written); once all of them are in
 * and on disk, the file takes its mode and is renamed over the old one in
 * one step. Anything short of that (a cut body, a full disk, a wrong hash)
 * removes the temporary file and leaves the old one as it was. */
#include "files-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "offload.h"
#include "random-id.h"
#include "steps.h"
#include "xalloc.h"

struct files_put {
	struct files_identity identity;
	struct files_place place;
	char temporary[32]; /* its name, in place.parent_fd */
	int fd;             /* the temporary file, boxd's copy */
	mode_t mode;
	bool committed;
};

static struct files_put *put_fail(struct files_put *put)
{
	files_put_free(put);
	return NULL;
}

/* The target as it is: a folder refuses the write; a file gives its mode
 * when the caller named none. */
static bool check_target(struct files_put *put, int mode, struct files_error *error)
{
	struct stat st;
	put->mode = mode >= 0 ? (mode_t)mode : 0644;
	if (fstatat(put->place.parent_fd, put->place.name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return true;
	if (S_ISDIR(st.st_mode)) {
		error->failure = FAILURE_CONFLICT;
		snprintf(error->message, sizeof error->message,
			 "%s is a folder: a file cannot replace it (remove it first)",
			 put->place.shown);
		return false;
	}
	if (mode < 0 && S_ISREG(st.st_mode))
		put->mode = st.st_mode & 07777;
	return true;
}

struct files_put *files_put_begin(const char *path, int mode, int *body_fd,
				  struct files_error *error)
{
	struct files_put *put = xcalloc(1, sizeof *put);
	put->fd = -1;
	put->place.parent_fd = -1;
	if (!files_identity_get(&put->identity, error)) {
		free(put);
		return NULL;
	}
	files_identity_take(&put->identity, true);
	bool ok = files_place_resolve(path, true, &put->identity, &put->place, error);
	if (ok && files_place_is_work_dir(&put->place)) {
		error->failure = FAILURE_BAD_REQUEST;
		snprintf(error->message, sizeof error->message,
			 "%s is the work dir itself: name a file inside it", put->place.shown);
		ok = false;
	}
	ok = ok && check_target(put, mode, error);
	for (int tries = 0; ok && put->fd < 0 && tries < 8; tries++) {
		char random[17];
		random_hex(random, 8);
		snprintf(put->temporary, sizeof put->temporary, ".boxd-put-%s", random);
		put->fd = openat(put->place.parent_fd, put->temporary,
				 O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (put->fd < 0 && errno != EEXIST) {
			files_errno(error, errno, "write", put->place.shown);
			ok = false;
		}
	}
	files_identity_take(&put->identity, false);
	if (!ok)
		return put_fail(put);
	*body_fd = fcntl(put->fd, F_DUPFD_CLOEXEC, 0);
	if (*body_fd < 0) {
		files_errno(error, errno, "write", put->place.shown);
		return put_fail(put);
	}
	return put;
}

struct put_sync {
	struct files_put *put;
	int error; /* the write's, then the fsync's */
	files_put_done *done;
	void *arg;
};

/* On disk before the rename: a crash then leaves the old file or the
 * whole new one, never an empty one under the name. */
static void put_sync_work(void *arg)
{
	struct put_sync *sync = arg;
	if (fsync(sync->put->fd) < 0)
		sync->error = errno;
}

static void put_sync_done(void *arg)
{
	struct put_sync *sync = arg;
	struct files_error error;
	if (sync->error)
		files_errno(&error, sync->error, "write", sync->put->place.shown);
	sync->done(sync->arg, sync->error ? &error : NULL);
	free(sync);
}

void files_put_written(struct files_put *put, int written_error, files_put_done *done, void *arg)
{
	struct put_sync *sync = xcalloc(1, sizeof *sync);
	*sync = (struct put_sync){.put = put, .error = written_error, .done = done, .arg = arg};
	if (written_error)
		put_sync_done(sync);
	else
		offload_run(files_loop(), "files: the fsync of a write", put_sync_work,
			    put_sync_done, sync);
}

int files_put_reader(struct files_put *put)
{
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", put->fd);
	return open(proc, O_RDONLY | O_CLOEXEC);
}

cJSON *files_put_commit(struct files_put *put, struct files_error *error)
{
	struct files_place *place = &put->place;
	files_identity_take(&put->identity, true);
	bool ok = fchmod(put->fd, put->mode) == 0 &&
		  renameat(place->parent_fd, put->temporary, place->parent_fd, place->name) == 0;
	int saved = errno;
	cJSON *json = ok ? files_entry_json(place->parent_fd, place->name, place->shown) : NULL;
	if (ok) {
		put->committed = true;
		/* The rename itself on disk (best effort: a folder opened for it). */
		int folder = openat(place->parent_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (folder >= 0) {
			fsync(folder);
			close(folder);
		}
	}
	files_identity_take(&put->identity, false);
	if (!ok)
		files_errno(error, saved, "write", place->shown);
	else if (!json)
		files_errno(error, errno, "stat", place->shown);
	if (json)
		steps_add("files", "write %s (%.0f bytes)", place->shown,
			  cJSON_GetNumberValue(cJSON_GetObjectItem(json, "size")));
	return json;
}

void files_put_free(struct files_put *put)
{
	if (!put)
		return;
	if (put->fd >= 0) {
		if (!put->committed)
			unlinkat(put->place.parent_fd, put->temporary, 0);
		close(put->fd);
	}
	files_place_free(&put->place);
	free(put);
}
