/* boxd-archive: the sandboxed worker boxd runs for every upload and every
 * folder download, so libarchive and the untrusted bytes it parses never
 * share a process with boxd.
 *
 *   boxd-archive extract WORK_DIR DEST [--user NAME] [--cache FILE]  tar.gz on stdin
 *   boxd-archive create WORK_DIR PATH                  tar.gz on stdout
 *   boxd-archive diff WORK_DIR DEST LIMIT CACHE_FILE [--user NAME]  manifest on stdin
 *
 * DEST and PATH are relative to WORK_DIR and may not leave it by name;
 * extract and diff follow symbolic links the box already has wherever they
 * lead, with the box user's file-system identity (box_user_act). extract
 * prints one JSON line on stdout: {"ok":true,"files":N,"bytes":N} or
 * {"error":{"code","message"}}, the code a failure's (failure.h: bad_request,
 * disk_full or internal; never an HTTP status, which is boxd's router's to
 * choose); diff prints the API's answer ({"changed":[...]} or {"all":true})
 * or such an error; create writes the archive, and a failure goes to stderr
 * with exit status 1. boxd/services/archive-client.c is the other side.
 * The diff runs here rather than in boxd so that libcrypto, its threads and
 * the manifest's memory never weigh on boxd.
 *
 * Before reading a byte of input the worker confines itself: capabilities
 * trimmed to what its job needs (DAC_OVERRIDE, FOWNER to extract as root;
 * DAC_READ_SEARCH to read any file for a download or a diff; with a
 * non-root box user, extract and diff then act as that user, which takes
 * them out of effect),
 * no new privileges, and a seccomp allowlist in which everything else,
 * exec and sockets included, kills the process. If any step of that fails
 * the worker exits: it never runs unconfined.
 * BOXD_ARCHIVE_SECCOMP_DEBUG=1 turns a kill into a message naming the call. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "archive-tgz.h"
#include "failure.h"
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
			"       boxd-archive diff WORK_DIR DEST LIMIT CACHE_FILE [--user NAME]\n"
			"       boxd-archive sha256 WORK_DIR -   (the file on stdin)\n");
	return 2;
}

/* Prints `json` as the one line of the answer, and frees it. */
static void print_answer(cJSON *json)
{
	char *text = cJSON_PrintUnformatted(json);
	printf("%s\n", text);
	fflush(stdout);
	free(text);
	cJSON_Delete(json);
}

/* {"error":{"code","message"}}: the failure named by its contract code. */
static void print_error(enum failure failure, const char *message)
{
	cJSON *json = cJSON_CreateObject();
	cJSON *error = cJSON_AddObjectToObject(json, "error");
	cJSON_AddStringToObject(error, "code", failure_code(failure));
	cJSON_AddStringToObject(error, "message", message);
	print_answer(json);
}

/* What a failed extraction was: the caller's archive or place (refused), a
 * full disk, or boxd's own trouble. */
static enum failure extract_failure(const struct archive_extract_result *result)
{
	if (result->refused)
		return FAILURE_BAD_REQUEST;
	return result->disk_full ? FAILURE_DISK_FULL : FAILURE_INTERNAL;
}

static void print_result(bool ok, const struct archive_extract_result *result)
{
	if (!ok) {
		print_error(extract_failure(result), result->message);
		return;
	}
	cJSON *json = cJSON_CreateObject();
	cJSON_AddBoolToObject(json, "ok", true);
	cJSON_AddNumberToObject(json, "files", (double)result->files);
	cJSON_AddNumberToObject(json, "bytes", (double)result->bytes);
	print_answer(json);
}

/* The box user (--user) when the worker runs as root for a user who is
 * not: it then touches the work dir with that user's file-system identity
 * (setfsuid/setfsgid, which also takes the file capabilities out of effect),
 * so a symbolic link of the box's own layout leads a read or a write only
 * where that user could go anyway: the same as tar or node run as the user. */
struct box_user {
	bool act_as; /* false: the worker's own identity is the box user's */
	uid_t uid;
	gid_t gid;
};

/* Before the sandbox: the user's groups, and the user as saved uid and gid
 * so that setfsuid/setfsgid may name them with no capability left. */
static bool box_user_prepare(const char *user, struct box_user *box_user, char *message,
			     size_t message_size)
{
	memset(box_user, 0, sizeof *box_user);
	if (!user || geteuid() != 0)
		return true;
	struct passwd *entry = getpwnam(user);
	if (!entry) {
		snprintf(message, message_size, "the box user %s does not exist", user);
		return false;
	}
	if (entry->pw_uid == 0)
		return true;
	box_user->act_as = true;
	box_user->uid = entry->pw_uid;
	box_user->gid = entry->pw_gid;
	if (initgroups(entry->pw_name, entry->pw_gid) < 0 ||
	    setresgid((gid_t)-1, (gid_t)-1, entry->pw_gid) < 0 ||
	    setresuid((uid_t)-1, (uid_t)-1, entry->pw_uid) < 0) {
		snprintf(message, message_size, "cannot take the box user's identity: %s",
			 strerror(errno));
		return false;
	}
	return true;
}

/* Switches this thread to the box user's file-system identity (or back). */
static bool box_user_act(const struct box_user *box_user, bool as_user)
{
	if (!box_user->act_as)
		return true;
	uid_t uid = as_user ? box_user->uid : 0;
	gid_t gid = as_user ? box_user->gid : 0;
	setfsgid(gid);
	setfsuid(uid);
	return setfsuid((uid_t)-1) == (int)uid && setfsgid((gid_t)-1) == (int)gid;
}

/* Opens WORK_DIR/DEST, creating DEST's missing directories. A dest that is
 * (or passes through) a symbolic link the box has is followed wherever it
 * leads, as tar -C and mkdir -p follow it. */
static int open_dest(int work_fd, int root_fd, const char *dest,
		     struct archive_extract_result *result)
{
	const char *why = NULL;
	char *relative = work_path_relative("/", dest[0] == '/' ? dest + 1 : dest, &why);
	if (!relative) {
		snprintf(result->message, sizeof result->message, "dest %s", why);
		result->refused = true;
		return -1;
	}
	struct work_path_walk how = {.root_fd = root_fd, .create = true};
	int dir_fd = work_path_walk(work_fd, relative, &how);
	if (dir_fd < 0) {
		int error = errno;
		snprintf(result->message, sizeof result->message,
			 "dest cannot be made a directory (%s)", strerror(error));
		result->refused =
			error == ENOTDIR || error == ELOOP || error == ENOENT || error == EACCES;
		result->disk_full = error == ENOSPC || error == EDQUOT;
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
		written->names =
			xrealloc(written->names, (written->count + 1024) * sizeof *written->names);
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
		.input_fd = 0,
		.on_file = note_written,
		.on_file_arg = &written,
		.root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC),
	};
	struct box_user box_user;
	if (!box_user_prepare(user, &box_user, result.message, sizeof result.message)) {
		print_result(false, &result);
		return 1;
	}
	struct hash_cache *cache = cache_path ? hash_cache_open(cache_path) : NULL;
	char why[256];
	if (!archive_sandbox_enter(ARCHIVE_SANDBOX_EXTRACT, why, sizeof why)) {
		snprintf(result.message, sizeof result.message, "the archive sandbox failed: %s",
			 why);
		print_result(false, &result);
		return 1;
	}
	if (!box_user_act(&box_user, true)) {
		snprintf(result.message, sizeof result.message, "cannot act as the box user %s",
			 user);
		print_result(false, &result);
		return 1;
	}
	options.dest_fd = open_dest(work_fd, options.root_fd, dest, &result);
	bool ok = options.dest_fd >= 0 && archive_extract(&options, &result);
	/* The hash cache lives in RUN_DIR, which is boxd's, not the user's. */
	if (ok && box_user_act(&box_user, false))
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
		fprintf(stderr, "boxd-archive: the path %s\n",
			relative ? "is the work dir itself" : why);
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
			fprintf(stderr, "boxd-archive: cannot open the folder's parent: %s\n",
				strerror(errno));
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

static int run_diff(int work_fd, const char *dest, const char *limit_text, const char *cache_path,
		    const char *user)
{
	const char *why = NULL;
	char *relative = work_path_relative("/", dest[0] == '/' ? dest + 1 : dest, &why);
	if (!relative) {
		char message[256];
		snprintf(message, sizeof message, "dest %s", why);
		print_error(FAILURE_BAD_REQUEST, message);
		return 1;
	}
	struct box_user box_user;
	char message[256];
	if (!box_user_prepare(user, &box_user, message, sizeof message)) {
		print_error(FAILURE_INTERNAL, message);
		return 1;
	}
	/* Read through the box's own links wherever they lead, as the client's
	 * compare (node, run as the box user) reads: a dest that is missing, a
	 * dangling link or a loop answers all; one that is not a directory
	 * makes every entry differ. */
	box_user_act(&box_user, true);
	int dest_fd = work_path_open_following(work_fd, relative[0] ? relative : ".", O_PATH);
	box_user_act(&box_user, false);
	free(relative);
	if (box_user.act_as)
		sync_read_as(box_user.uid, box_user.gid);
	struct hash_cache *cache = hash_cache_open(cache_path);
	sync_map_files();
	if (!archive_sandbox_enter(ARCHIVE_SANDBOX_DIFF, message, sizeof message)) {
		print_error(FAILURE_INTERNAL, message);
		return 1;
	}
	size_t length;
	char *manifest = io_read_to_end(0, SIZE_MAX / 4, &length);
	if (!manifest) {
		snprintf(message, sizeof message, "cannot read the manifest: %s", strerror(errno));
		print_error(FAILURE_INTERNAL, message);
		return 1;
	}
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	struct sync_diff_result result;
	sync_diff_run(dest_fd, manifest, length, strtoul(limit_text, NULL, 10), cache,
		      cores < 1   ? 1
		      : cores > 4 ? 4
				  : (int)cores,
		      &result);
	hash_cache_close(cache);
	free(manifest);
	if (result.status == SYNC_OK) {
		char *text = cJSON_PrintUnformatted(result.answer);
		fputs(text, stdout);
		free(text);
		cJSON_Delete(result.answer);
	} else {
		print_error(result.status == SYNC_BAD_REQUEST ? FAILURE_BAD_REQUEST
							      : FAILURE_INTERNAL,
			    result.message);
	}
	fflush(stdout);
	return result.status == SYNC_OK ? 0 : 1;
}

/* The SHA-256 of the file boxd opened as stdin (GET /v1/files/stat with
 * hash=1, PUT /v1/files with X-Content-SHA256): here, so that hashing a
 * 1 GiB file neither holds boxd's loop for seconds nor maps libcrypto into
 * boxd. Prints {"sha256":"<hex>","size":N} or an error. */
static int run_sha256(void)
{
	/* libcrypto reads its configuration at its first use: before the
	 * sandbox. */
	EVP_MD_CTX *context = EVP_MD_CTX_new();
	bool ok = context && EVP_DigestInit_ex(context, EVP_sha256(), NULL) == 1;
	char message[256];
	if (!archive_sandbox_enter(ARCHIVE_SANDBOX_CREATE, message, sizeof message)) {
		EVP_MD_CTX_free(context);
		print_error(FAILURE_INTERNAL, message);
		return 1;
	}
	static unsigned char buffer[1 << 20];
	unsigned long long size = 0;
	ssize_t got;
	while (ok && (got = read(0, buffer, sizeof buffer)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		ok = got > 0 && EVP_DigestUpdate(context, buffer, (size_t)got) == 1;
		size += got > 0 ? (unsigned long long)got : 0;
	}
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int length = 0;
	ok = ok && EVP_DigestFinal_ex(context, digest, &length) == 1;
	EVP_MD_CTX_free(context);
	if (!ok) {
		snprintf(message, sizeof message, "cannot hash the file: %s", strerror(errno));
		print_error(FAILURE_INTERNAL, message);
		return 1;
	}
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	for (unsigned int i = 0; i < length; i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	cJSON *json = cJSON_CreateObject();
	cJSON_AddStringToObject(json, "sha256", hex);
	cJSON_AddNumberToObject(json, "size", (double)size);
	print_answer(json);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return usage();
	signal(SIGPIPE, SIG_IGN);
	int work_fd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (work_fd < 0) {
		fprintf(stderr, "boxd-archive: cannot open the work dir %s: %s\n", argv[2],
			strerror(errno));
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
	if (strcmp(argv[1], "sha256") == 0)
		return run_sha256();
	if (strcmp(argv[1], "diff") == 0 && argc == 6)
		return run_diff(work_fd, argv[3], argv[4], argv[5], NULL);
	if (strcmp(argv[1], "diff") == 0 && argc == 8 && strcmp(argv[6], "--user") == 0)
		return run_diff(work_fd, argv[3], argv[4], argv[5], argv[7]);
	return usage();
}
