/* boxd-archive: the sandboxed worker boxd runs for every upload and every
 * folder download, so libarchive and the untrusted bytes it parses never
 * share a process with boxd.
 *
 *   boxd-archive extract WORK_DIR DEST [--user NAME] [--cache FILE]  tar.gz on stdin
 *   boxd-archive create WORK_DIR PATH                  tar.gz on stdout
 *   boxd-archive diff WORK_DIR DEST LIMIT CACHE_FILE   manifest on stdin
 *
 * DEST and PATH are relative to WORK_DIR and may not leave it. extract
 * prints one JSON line on stdout: {"ok":true,"files":N,"bytes":N} or
 * {"error":{"code":"bad_request"|"internal","message":...}}; diff prints
 * the API's answer ({"changed":[...]} or {"all":true}) or such an error;
 * create writes the archive, and a failure goes to stderr with exit status 1.
 * The diff runs here rather than in boxd so that libcrypto, its threads and
 * the manifest's memory never weigh on boxd.
 *
 * Before reading a byte of input the worker confines itself: capabilities
 * trimmed to what its job needs (CHOWN, DAC_OVERRIDE, FOWNER to extract as
 * root for the box user; DAC_READ_SEARCH to read any file for a download or
 * a diff),
 * no new privileges, and a seccomp allowlist in which everything else,
 * exec and sockets included, kills the process. If any step of that fails
 * the worker exits: it never runs unconfined.
 * BOXD_ARCHIVE_SECCOMP_DEBUG=1 turns a kill into a message naming the call. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "archive-tgz.h"
#include "hash-cache.h"
#include "io.h"
#include "archive-sandbox.h"
#include "sync.h"
#include "work-path.h"
#include "xalloc.h"

static int usage(void)
{
	fprintf(stderr, "usage: boxd-archive extract WORK_DIR DEST [--user NAME] [--cache FILE]\n"
			"       boxd-archive create WORK_DIR PATH\n"
			"       boxd-archive diff WORK_DIR DEST LIMIT CACHE_FILE\n");
	return 2;
}

static void print_result(bool ok, const struct archive_extract_result *result)
{
	cJSON *json = cJSON_CreateObject();
	if (ok) {
		cJSON_AddBoolToObject(json, "ok", true);
		cJSON_AddNumberToObject(json, "files", (double)result->files);
		cJSON_AddNumberToObject(json, "bytes", (double)result->bytes);
	} else {
		cJSON *error = cJSON_AddObjectToObject(json, "error");
		cJSON_AddStringToObject(error, "code", result->refused ? "bad_request" : "internal");
		cJSON_AddStringToObject(error, "message", result->message);
	}
	char *text = cJSON_PrintUnformatted(json);
	printf("%s\n", text);
	fflush(stdout);
	free(text);
	cJSON_Delete(json);
}

/* Opens WORK_DIR/DEST, creating DEST's missing directories. */
static int open_dest(int work_fd, const char *dest, struct archive_extract_result *result)
{
	const char *why = NULL;
	char *relative = work_path_relative("/", dest[0] == '/' ? dest + 1 : dest, &why);
	if (!relative) {
		snprintf(result->message, sizeof result->message, "dest %s", why);
		result->refused = true;
		return -1;
	}
	int dir_fd = dup(work_fd);
	for (char *part = strtok(relative, "/"); part && dir_fd >= 0; part = strtok(NULL, "/")) {
		mkdirat(dir_fd, part, 0755);
		int next = work_path_open(dir_fd, "/", part, &why);
		close(dir_fd);
		dir_fd = next;
	}
	if (dir_fd < 0) {
		snprintf(result->message, sizeof result->message,
			 "dest cannot be made a directory inside the work dir (%s)", strerror(errno));
		result->refused = errno == EXDEV || errno == ENOTDIR || errno == ELOOP;
	}
	free(relative);
	return dir_fd;
}

/* Uploaded files worth hashing for the cache: a bounded list, so a huge
 * upload does not wait on hashing it all again (the next diff does it). */
#define REMEMBER_FILES 50000
#define REMEMBER_BYTES (256ull << 20)

struct written {
	char **names;
	size_t count;
	bool too_many;
};

static void note_written(void *arg, const char *name)
{
	struct written *written = arg;
	if (written->count == REMEMBER_FILES) {
		written->too_many = true;
		return;
	}
	if (written->count % 1024 == 0)
		written->names = xrealloc(written->names, (written->count + 1024) * sizeof *written->names);
	written->names[written->count++] = xstrdup(name);
}

/* Once the clock has moved past the last file's change (so the records are
 * not racy), hashes what was written into the cache, as a diff would. */
static void remember_written(int dest_fd, struct written *written, uint64_t bytes,
			     struct hash_cache *cache)
{
	if (cache && !written->too_many && bytes <= REMEMBER_BYTES && written->count > 0) {
		struct timespec end;
		clock_gettime(CLOCK_REALTIME, &end);
		int64_t end_ns = (int64_t)end.tv_sec * 1000000000 + end.tv_nsec;
		while (hash_cache_now_ns() <= end_ns) {
			struct timespec pause = {.tv_nsec = 1000000};
			nanosleep(&pause, NULL);
		}
		sync_remember(dest_fd, written->names, written->count, cache);
	}
	for (size_t i = 0; i < written->count; i++)
		free(written->names[i]);
	free(written->names);
}

static int run_extract(int work_fd, const char *dest, const char *user, const char *cache_path)
{
	struct archive_extract_result result = {0};
	struct written written = {0};
	struct archive_extract_options options = {
		.input_fd = 0, .on_file = note_written, .on_file_arg = &written,
	};
	if (user && geteuid() == 0) {
		struct passwd *entry = getpwnam(user);
		if (!entry) {
			snprintf(result.message, sizeof result.message, "the box user %s does not exist", user);
			print_result(false, &result);
			return 1;
		}
		options.set_owner = entry->pw_uid != 0 || entry->pw_gid != 0;
		options.uid = entry->pw_uid;
		options.gid = entry->pw_gid;
	}
	options.dest_fd = open_dest(work_fd, dest, &result);
	struct hash_cache *cache = cache_path && options.dest_fd >= 0 ? hash_cache_open(cache_path) : NULL;
	char why[256];
	if (options.dest_fd >= 0 && !archive_sandbox_enter(ARCHIVE_SANDBOX_EXTRACT, why, sizeof why)) {
		snprintf(result.message, sizeof result.message, "the archive sandbox failed: %s", why);
		print_result(false, &result);
		return 1;
	}
	bool ok = options.dest_fd >= 0 && archive_extract(&options, &result);
	if (ok)
		remember_written(options.dest_fd, &written, result.bytes, cache);
	hash_cache_close(cache);
	print_result(ok, &result);
	return ok ? 0 : 1;
}

static int run_create(int work_fd, const char *path)
{
	const char *why = NULL;
	char *relative = work_path_relative("/", path[0] == '/' ? path + 1 : path, &why);
	if (!relative || !relative[0]) {
		fprintf(stderr, "boxd-archive: the path %s\n", relative ? "is the work dir itself" : why);
		free(relative);
		return 1;
	}
	char *slash = strrchr(relative, '/');
	const char *name = slash ? slash + 1 : relative;
	int parent_fd = work_fd;
	if (slash) {
		*slash = '\0';
		parent_fd = work_path_open(work_fd, "/", relative, &why);
		if (parent_fd < 0) {
			fprintf(stderr, "boxd-archive: cannot open the folder's parent: %s\n", strerror(errno));
			return 1;
		}
	}
	char message[512];
	if (!archive_sandbox_enter(ARCHIVE_SANDBOX_CREATE, message, sizeof message)) {
		fprintf(stderr, "boxd-archive: the archive sandbox failed: %s\n", message);
		return 1;
	}
	if (!archive_create(parent_fd, name, 1, message, sizeof message)) {
		fprintf(stderr, "boxd-archive: %s\n", message);
		return 1;
	}
	return 0;
}

static void print_error(const char *code, const char *message)
{
	cJSON *json = cJSON_CreateObject();
	cJSON *error = cJSON_AddObjectToObject(json, "error");
	cJSON_AddStringToObject(error, "code", code);
	cJSON_AddStringToObject(error, "message", message);
	char *text = cJSON_PrintUnformatted(json);
	printf("%s\n", text);
	free(text);
	cJSON_Delete(json);
}

static int run_diff(int work_fd, const char *dest, const char *limit_text, const char *cache_path)
{
	const char *why = NULL;
	int dest_fd = work_path_open(work_fd, "/", dest[0] == '/' ? dest + 1 : dest, &why);
	if (dest_fd < 0 && errno != ENOENT && errno != ENOTDIR) {
		char message[256];
		snprintf(message, sizeof message, "dest %s", why ? why : "leads outside the work dir");
		print_error("bad_request", message);
		return 1;
	}
	struct hash_cache *cache = hash_cache_open(cache_path);
	sync_map_files();
	char message[256];
	if (!archive_sandbox_enter(ARCHIVE_SANDBOX_DIFF, message, sizeof message)) {
		print_error("internal", message);
		return 1;
	}
	size_t length;
	char *manifest = io_read_to_end(0, SIZE_MAX / 4, &length);
	if (!manifest) {
		snprintf(message, sizeof message, "cannot read the manifest: %s", strerror(errno));
		print_error("internal", message);
		return 1;
	}
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	struct sync_diff_result result;
	sync_diff_run(dest_fd, manifest, length, strtoul(limit_text, NULL, 10), cache,
		      cores < 1 ? 1 : cores > 4 ? 4 : (int)cores, &result);
	hash_cache_close(cache);
	free(manifest);
	if (result.status == SYNC_OK) {
		char *text = cJSON_PrintUnformatted(result.answer);
		fputs(text, stdout);
		free(text);
		cJSON_Delete(result.answer);
	} else {
		print_error(result.status == SYNC_BAD_REQUEST ? "bad_request" : "internal", result.message);
	}
	fflush(stdout);
	return result.status == SYNC_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return usage();
	signal(SIGPIPE, SIG_IGN);
	int work_fd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (work_fd < 0) {
		fprintf(stderr, "boxd-archive: cannot open the work dir %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	if (strcmp(argv[1], "extract") == 0) {
		const char *user = NULL, *cache = NULL;
		for (int i = 4; i + 1 < argc; i += 2) {
			if (strcmp(argv[i], "--user") == 0)
				user = argv[i + 1];
			else if (strcmp(argv[i], "--cache") == 0)
				cache = argv[i + 1];
			else
				return usage();
		}
		return run_extract(work_fd, argv[3], user, cache);
	}
	if (strcmp(argv[1], "create") == 0)
		return run_create(work_fd, argv[3]);
	if (strcmp(argv[1], "diff") == 0 && argc == 6)
		return run_diff(work_fd, argv[3], argv[4], argv[5]);
	return usage();
}
