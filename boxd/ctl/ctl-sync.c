/* ctl-sync.c: boxctl sync diff DEST < MANIFEST, and boxctl sync push
 * LOCALDIR DEST: the whole client flow of sandbox_sync (manifest, diff,
 * upload of what differs as a tar.gz) with a progress line on stderr.
 *
 * Which local files count: in a git working tree the tracked files plus the
 * untracked ones .gitignore does not exclude (git ls-files --cached
 * --others --exclude-standard); elsewhere the whole tree minus the usual
 * generated or vendored folders (skipped_names below). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "clock.h"
#include "ctl.h"
#include "entry-hash.h"
#include "manifest.h"
#include "xalloc.h"

#define SINGLE_UPLOAD_LIMIT (60u << 20) /* larger syncs go in resumable pieces */
#define PIECE_SIZE (16u << 20)

extern char **environ;

static const char *const skipped_names[] = {
	".git",          "node_modules",  "dist",        "build", "coverage", ".venv", "venv",
	"__pycache__",   ".pytest_cache", ".mypy_cache", ".tox",  ".next",    ".nuxt", ".turbo",
	".parcel-cache", ".cache",        ".gradle",     ".sbx",  NULL,
};

struct path_list {
	char **items;
	size_t count, capacity;
};

static void list_add(struct path_list *list, const char *path)
{
	if (list->count == list->capacity) {
		list->capacity = list->capacity ? 2 * list->capacity : 1024;
		list->items = xrealloc(list->items, list->capacity * sizeof *list->items);
	}
	list->items[list->count++] = xstrdup(path);
}

static void list_free(struct path_list *list)
{
	for (size_t i = 0; i < list->count; i++)
		free(list->items[i]);
	free(list->items);
}

/* git ls-files in `dir`; false when it is not a git working tree. */
static bool collect_git(const char *dir, struct path_list *list)
{
	int out[2];
	if (pipe2(out, O_CLOEXEC) < 0)
		return false;
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, out[1], 1);
	posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
	char *argv[] = {"git",      "-C",       (char *)dir,          "ls-files", "-z",
			"--cached", "--others", "--exclude-standard", NULL};
	pid_t pid;
	int spawned = posix_spawnp(&pid, "git", &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	close(out[1]);
	if (spawned != 0) {
		close(out[0]);
		return false;
	}
	FILE *stream = fdopen(out[0], "r");
	char *item = NULL;
	size_t size = 0;
	struct path_list found = {0};
	while (getdelim(&item, &size, '\0', stream) > 0)
		if (item[0])
			list_add(&found, item);
	free(item);
	fclose(stream);
	int status;
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		list_free(&found);
		return false;
	}
	*list = found;
	return true;
}

static void collect_walk(const char *root, const char *relative, struct path_list *list)
{
	char *path = relative[0] ? xasprintf("%s/%s", root, relative) : xstrdup(root);
	DIR *dir = opendir(path);
	free(path);
	if (!dir)
		return;
	struct dirent *entry;
	while ((entry = readdir(dir))) {
		const char *name = entry->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		bool skipped = false;
		for (int i = 0; skipped_names[i]; i++)
			skipped |= strcmp(name, skipped_names[i]) == 0;
		if (skipped)
			continue;
		char *child = relative[0] ? xasprintf("%s/%s", relative, name) : xstrdup(name);
		struct stat st;
		if (fstatat(dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISDIR(st.st_mode))
				collect_walk(root, child, list);
			else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
				list_add(list, child);
		}
		free(child);
	}
	closedir(dir);
}

/* The manifest of `list` (entries that are neither files nor links, or
 * vanished, are dropped from the list). */
static char *build_manifest(const char *root, struct path_list *list, size_t *length)
{
	int root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t capacity = 1 << 16, used = 0, kept = 0;
	char *manifest = xmalloc(capacity);
	char *buffer = xmalloc(256 * 1024);
	for (size_t i = 0; i < list->count; i++) {
		const char *path = list->items[i];
		unsigned char hash[ENTRY_HASH_SIZE];
		struct stat st;
		bool ok = root_fd >= 0 && fstatat(root_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
		if (ok && S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t got = readlinkat(root_fd, path, target, sizeof target);
			ok = got >= 0;
			if (ok)
				entry_hash_symlink(target, (size_t)got, hash);
		} else if (ok && S_ISREG(st.st_mode)) {
			int fd = openat(root_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			ok = fd >= 0 && entry_hash_fd(fd, st.st_mode, buffer, 256 * 1024, hash);
			if (fd >= 0)
				close(fd);
		} else {
			ok = false;
		}
		if (!ok) {
			free(list->items[i]);
			continue;
		}
		size_t need = 2 * ENTRY_HASH_SIZE + 2 * strlen(path) + 3;
		if (used + need > capacity) {
			capacity = 2 * (used + need);
			manifest = xrealloc(manifest, capacity);
		}
		manifest_hex_encode(hash, ENTRY_HASH_SIZE, manifest + used);
		used += 2 * ENTRY_HASH_SIZE;
		manifest[used++] = ' ';
		manifest_hex_encode(path, strlen(path), manifest + used);
		used += 2 * strlen(path);
		manifest[used++] = '\n';
		list->items[kept++] = list->items[i];
	}
	list->count = kept;
	free(buffer);
	if (root_fd >= 0)
		close(root_fd);
	*length = used;
	return manifest;
}

static void print_error_answer(const struct client_response *response)
{
	cJSON *json = cJSON_ParseWithLength(response->body, response->body_length);
	const char *message = cJSON_GetStringValue(
		cJSON_GetObjectItem(cJSON_GetObjectItem(json, "error"), "message"));
	if (message)
		fprintf(stderr, "\nboxctl: %s\n", message);
	else
		fprintf(stderr, "\nboxctl: boxd answered HTTP %d\n", response->status);
	cJSON_Delete(json);
}

/* A call whose 2xx answer is JSON; NULL after printing why. */
static cJSON *call_json(struct ctl *ctl, const char *method, const char *path,
			const char *content_type, const void *body, size_t length,
			const char *headers)
{
	struct client_response response;
	if (ctl_call_raw(ctl, method, path, content_type, body, length, headers, &response) !=
	    CTL_OK)
		return NULL;
	cJSON *json = NULL;
	if (response.status >= 200 && response.status <= 299)
		json = cJSON_ParseWithLength(response.body, response.body_length);
	else
		print_error_answer(&response);
	client_response_free(&response);
	return json;
}

static cJSON *post_diff(struct ctl *ctl, const char *dest, const char *manifest, size_t length)
{
	char *encoded = ctl_url_encode(dest);
	char *path = xasprintf("/v1/sync/diff?dest=%s&limit=400", encoded);
	cJSON *answer = call_json(ctl, "POST", path, "text/plain", manifest, length, NULL);
	free(encoded);
	free(path);
	return answer;
}

static bool pack_one(struct archive *archive, struct archive_entry *entry, int root_fd,
		     const char *path, char *buffer)
{
	struct stat st;
	if (fstatat(root_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return true; /* vanished since hashing: nothing to send */
	archive_entry_clear(entry);
	archive_entry_copy_pathname(entry, path);
	archive_entry_copy_stat(entry, &st);
	int fd = -1;
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t got = readlinkat(root_fd, path, target, sizeof target - 1);
		if (got < 0)
			return true;
		target[got] = '\0';
		archive_entry_copy_symlink(entry, target);
		archive_entry_set_size(entry, 0);
	} else {
		fd = openat(root_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			return true;
	}
	bool ok = archive_write_header(archive, entry) >= ARCHIVE_WARN;
	ssize_t got;
	while (ok && fd >= 0 && (got = read(fd, buffer, 256 * 1024)) > 0)
		ok = archive_write_data(archive, buffer, (size_t)got) >= 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* The listed entries as a tar.gz in an unlinked temporary file; -1 on failure. */
static int pack(const char *root, char **paths, size_t count, off_t *size)
{
	char template[] = "/tmp/boxctl-push-XXXXXX";
	int fd = mkostemp(template, O_CLOEXEC);
	if (fd < 0)
		return -1;
	unlink(template);
	int root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct archive *archive = archive_write_new();
	archive_write_set_format_pax_restricted(archive);
	archive_write_add_filter_gzip(archive);
	archive_write_set_filter_option(archive, "gzip", "compression-level", "1");
	struct archive_entry *entry = archive_entry_new();
	char *buffer = xmalloc(256 * 1024);
	bool ok = root_fd >= 0 && archive_write_open_fd(archive, fd) == ARCHIVE_OK;
	for (size_t i = 0; ok && i < count; i++)
		ok = pack_one(archive, entry, root_fd, paths[i], buffer);
	if (archive_write_close(archive) != ARCHIVE_OK)
		ok = false;
	if (!ok)
		fprintf(stderr, "\nboxctl: cannot make the archive: %s\n",
			archive_error_string(archive));
	archive_write_free(archive);
	archive_entry_free(entry);
	free(buffer);
	if (root_fd >= 0)
		close(root_fd);
	*size = lseek(fd, 0, SEEK_CUR);
	if (!ok) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends the archive in one request, or in pieces through /v1/uploads. */
static cJSON *upload(struct ctl *ctl, const char *dest, int fd, off_t size)
{
	char *encoded = ctl_url_encode(dest);
	cJSON *answer = NULL;
	void *data = size ? mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	if (size && data == MAP_FAILED) {
		fprintf(stderr, "\nboxctl: cannot read the archive back: %s\n", strerror(errno));
		free(encoded);
		return NULL;
	}
	if ((size_t)size <= SINGLE_UPLOAD_LIMIT) {
		char *path = xasprintf("/v1/sync/upload?dest=%s", encoded);
		answer = call_json(ctl, "POST", path, "application/gzip", data, (size_t)size, NULL);
		free(path);
	} else {
		char *path = xasprintf("/v1/uploads?dest=%s", encoded);
		cJSON *created = call_json(ctl, "POST", path, NULL, NULL, 0, NULL);
		free(path);
		const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(created, "uploadId"));
		bool ok = id != NULL;
		for (off_t offset = 0; ok && offset < size; offset += PIECE_SIZE) {
			size_t piece =
				size - offset < PIECE_SIZE ? (size_t)(size - offset) : PIECE_SIZE;
			char headers[64];
			snprintf(headers, sizeof headers, "Upload-Offset: %lld\r\n",
				 (long long)offset);
			path = xasprintf("/v1/uploads/%s", id);
			cJSON *stored = call_json(ctl, "PUT", path, "application/octet-stream",
						  (char *)data + offset, piece, headers);
			free(path);
			ok = stored != NULL;
			cJSON_Delete(stored);
			fprintf(stderr, "\rboxctl sync: uploading %lld of %lld MB ",
				(long long)(offset + (off_t)piece) >> 20, (long long)size >> 20);
		}
		if (ok) {
			path = xasprintf("/v1/uploads/%s/finish", id);
			answer = call_json(ctl, "POST", path, NULL, NULL, 0, NULL);
			free(path);
		}
		cJSON_Delete(created);
	}
	if (size)
		munmap(data, (size_t)size);
	free(encoded);
	return answer;
}

static int run_diff(struct ctl *ctl, const char *dest)
{
	size_t capacity = 1 << 16, length = 0;
	char *manifest = xmalloc(capacity);
	ssize_t got;
	while ((got = read(0, manifest + length, capacity - length)) > 0) {
		length += (size_t)got;
		if (length == capacity)
			manifest = xrealloc(manifest, capacity *= 2);
	}
	cJSON *answer = post_diff(ctl, dest, manifest, length);
	free(manifest);
	if (!answer)
		return CTL_API_ERROR;
	if (!ctl_print_json(ctl, answer)) {
		if (cJSON_IsTrue(cJSON_GetObjectItem(answer, "all")))
			printf("all\n");
		const cJSON *item;
		cJSON_ArrayForEach(item, cJSON_GetObjectItem(answer, "changed"))
		{
			const char *hex = cJSON_GetStringValue(item);
			size_t bytes = hex ? strlen(hex) / 2 : 0;
			char *path = xmalloc(bytes + 1);
			if (hex && manifest_hex_decode(hex, bytes, (unsigned char *)path)) {
				fwrite(path, 1, bytes, stdout);
				putchar('\n');
			}
			free(path);
		}
	}
	cJSON_Delete(answer);
	return CTL_OK;
}

/* The entries of `list` the diff named, or all of them. */
static char **pick_changed(const cJSON *answer, struct path_list *list, size_t *count)
{
	if (cJSON_IsTrue(cJSON_GetObjectItem(answer, "all"))) {
		*count = list->count;
		return list->items;
	}
	const cJSON *changed = cJSON_GetObjectItem(answer, "changed");
	char **picked = xcalloc((size_t)cJSON_GetArraySize(changed) + 1, sizeof *picked);
	*count = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, changed)
	{
		const char *hex = cJSON_GetStringValue(item);
		size_t bytes = hex ? strlen(hex) / 2 : 0;
		char *path = xmalloc(bytes + 1);
		if (hex && manifest_hex_decode(hex, bytes, (unsigned char *)path)) {
			path[bytes] = '\0';
			picked[(*count)++] = path;
		} else {
			free(path);
		}
	}
	return picked;
}

static int run_push(struct ctl *ctl, const char *local, const char *dest)
{
	int64_t started = clock_monotonic_ms();
	struct path_list list = {0};
	bool git = collect_git(local, &list);
	if (!git)
		collect_walk(local, "", &list);
	size_t length;
	char *manifest = build_manifest(local, &list, &length);
	fprintf(stderr, "boxctl sync: %zu files hashed (%s)", list.count,
		git ? "git" : "tree walk");
	cJSON *answer = post_diff(ctl, dest, manifest, length);
	free(manifest);
	if (!answer) {
		list_free(&list);
		return CTL_API_ERROR;
	}
	size_t count;
	char **paths = pick_changed(answer, &list, &count);
	bool all = paths == list.items;
	fprintf(stderr, ", %s%zu differ", all ? "all: " : "", count);
	int status = CTL_OK;
	cJSON *result = NULL;
	if (count > 0) {
		off_t size;
		int fd = pack(local, paths, count, &size);
		if (fd >= 0) {
			fprintf(stderr, ", uploading %.1f MB ", (double)size / 1e6);
			result = upload(ctl, dest, fd, size);
			close(fd);
		}
		status = result ? CTL_OK : CTL_API_ERROR;
	}
	if (status == CTL_OK && !ctl_print_json(ctl, result ? result : answer))
		fprintf(stderr, "... done in %.1f s\n",
			(double)(clock_monotonic_ms() - started) / 1000);
	if (!all) {
		for (size_t i = 0; i < count; i++)
			free(paths[i]);
		free(paths);
	}
	cJSON_Delete(result);
	cJSON_Delete(answer);
	list_free(&list);
	return status;
}

static int run_sync(struct ctl *ctl, int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "diff") == 0)
		return run_diff(ctl, argv[2]);
	if (argc == 4 && strcmp(argv[1], "push") == 0)
		return run_push(ctl, argv[2], argv[3]);
	return ctl_usage_error("sync", "takes `diff DEST < MANIFEST` or `push LOCALDIR DEST`");
}

const struct ctl_command ctl_sync_commands[] = {
	{"sync",
	 "  sync diff DEST < MANIFEST   which manifest entries differ in the box\n"
	 "  sync push LOCALDIR DEST     send what differs (git-aware) to WORK/DEST",
	 run_sync},
	{0},
};
