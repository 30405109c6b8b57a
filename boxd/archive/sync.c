#include "sync.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "entry-hash.h"
#include "hash-cache.h"
#include "manifest.h"
#include "safe-path.h"
#include "work-path.h"
#include "xalloc.h"

#define READ_BUFFER_SIZE (256u * 1024)
#define BATCH 64

struct diff_entry {
	unsigned char sha1[MANIFEST_SHA1_SIZE];
	bool changed;
	const char *path; /* NUL-terminated, in the job's arena */
	size_t path_length;
};

struct diff_job {
	int dest_fd;
	struct diff_entry *entries;
	size_t entry_count;
	unsigned long limit;
	struct hash_cache *cache;
	atomic_size_t next;
	atomic_ulong changed, hashed, cache_hits;
	atomic_bool over_limit;
	atomic_bool identity_failed;
};

/* Files at least this big are hashed from a mapping of the page cache,
 * which saves copying them into a buffer (a third of a cold diff's time). */
#define MAP_THRESHOLD (32u * 1024)

static bool map_files;

/* The box user's identity for reading (sync_read_as), when set. */
static bool read_as_user;
static uid_t read_uid;
static gid_t read_gid;

void sync_read_as(uid_t uid, gid_t gid)
{
	read_as_user = true;
	read_uid = uid;
	read_gid = gid;
}

/* setfsuid and setfsgid act on the calling thread only. */
static bool read_identity(bool as_user)
{
	if (!read_as_user)
		return true;
	uid_t uid = as_user ? read_uid : 0;
	gid_t gid = as_user ? read_gid : 0;
	setfsgid(gid);
	setfsuid(uid);
	return setfsuid((uid_t)-1) == (int)uid && setfsgid((gid_t)-1) == (int)gid;
}
static __thread sigjmp_buf *bus_error_jump;

/* A mapped file truncated under us faults with SIGBUS: that file differs. */
static void on_bus_error(int signal_number)
{
	if (bus_error_jump)
		siglongjmp(*bus_error_jump, 1);
	signal(SIGBUS, SIG_DFL);
	raise(SIGBUS);
}

void sync_map_files(void)
{
	struct sigaction action = {.sa_handler = on_bus_error};
	sigemptyset(&action.sa_mask);
	map_files = sigaction(SIGBUS, &action, NULL) == 0;
}

static bool hash_mapped(int fd, const struct stat *st, unsigned char out[ENTRY_HASH_SIZE])
{
	size_t size = (size_t)st->st_size;
	void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	if (map == MAP_FAILED)
		return false;
	sigjmp_buf jump;
	bool ok = false;
	if (sigsetjmp(jump, 1) == 0) {
		bus_error_jump = &jump;
		struct entry_hash hash;
		entry_hash_begin_file(&hash, st->st_mode);
		entry_hash_update(&hash, map, size);
		entry_hash_finish(&hash, out);
		ok = true;
	}
	bus_error_jump = NULL;
	munmap(map, size);
	return ok;
}

/* Hashes the file's first st_size bytes: the size its cache key records. */
static bool hash_regular(int fd, const struct stat *st, void *buffer,
			 unsigned char out[ENTRY_HASH_SIZE])
{
	if (map_files && st->st_size >= (off_t)MAP_THRESHOLD)
		return hash_mapped(fd, st, out);
	struct entry_hash hash;
	entry_hash_begin_file(&hash, st->st_mode);
	off_t left = st->st_size;
	while (left > 0) {
		ssize_t got =
			read(fd, buffer,
			     left < (off_t)READ_BUFFER_SIZE ? (size_t)left : READ_BUFFER_SIZE);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false; /* shrank under us: it differs */
		entry_hash_update(&hash, buffer, (size_t)got);
		left -= got;
	}
	entry_hash_finish(&hash, out);
	return true;
}

/* The entry's current hash; false when it is missing or not a regular file
 * or symbolic link (it differs then, whatever the manifest says). */
static bool hash_entry(struct diff_job *job, int parent_fd, const char *name,
		       unsigned char out[ENTRY_HASH_SIZE], void *buffer)
{
	struct stat st;
	if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t length = readlinkat(parent_fd, name, target, sizeof target);
		if (length < 0)
			return false;
		entry_hash_symlink(target, (size_t)length, out);
		return true;
	}
	if (!S_ISREG(st.st_mode))
		return false;
	if (hash_cache_lookup(job->cache, &st, out)) {
		atomic_fetch_add(&job->cache_hits, 1);
		return true;
	}
	int64_t hashed_at = hash_cache_now_ns();
	int fd = openat(parent_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (ok)
		ok = hash_regular(fd, &st, buffer, out);
	close(fd);
	if (ok) {
		hash_cache_store(job->cache, &st, hashed_at, out);
		atomic_fetch_add(&job->hashed, 1);
	}
	return ok;
}

/* Keeps the last parent directory open: manifests list a directory's
 * entries together, so most entries reuse it. */
struct parent_dir {
	char *path;
	size_t length;
	int fd; /* -1: could not be opened (every entry under it differs) */
};

static int parent_for(struct diff_job *job, struct parent_dir *parent, const char *path,
		      size_t length)
{
	if (length == 0)
		return job->dest_fd;
	if (parent->path && parent->length == length && memcmp(parent->path, path, length) == 0)
		return parent->fd;
	if (parent->fd >= 0)
		close(parent->fd);
	free(parent->path);
	parent->path = xstrndup(path, length);
	parent->length = length;
	/* Through the box's own directory links, wherever they lead. */
	parent->fd = work_path_open_following(job->dest_fd, parent->path, O_PATH | O_DIRECTORY);
	return parent->fd;
}

static void *diff_worker(void *arg)
{
	struct diff_job *job = arg;
	if (!read_identity(true)) {
		atomic_store(&job->identity_failed, true);
		read_identity(false);
		return NULL;
	}
	void *buffer = xmalloc(READ_BUFFER_SIZE);
	struct parent_dir parent = {.fd = -1};
	for (;;) {
		size_t start = atomic_fetch_add(&job->next, BATCH);
		if (start >= job->entry_count || atomic_load(&job->over_limit))
			break;
		size_t end = start + BATCH < job->entry_count ? start + BATCH : job->entry_count;
		for (size_t i = start; i < end; i++) {
			struct diff_entry *entry = &job->entries[i];
			const char *slash = strrchr(entry->path, '/');
			size_t dir_length = slash ? (size_t)(slash - entry->path) : 0;
			int parent_fd = parent_for(job, &parent, entry->path, dir_length);
			unsigned char hash[ENTRY_HASH_SIZE];
			entry->changed =
				parent_fd < 0 ||
				!hash_entry(job, parent_fd, slash ? slash + 1 : entry->path, hash,
					    buffer) ||
				memcmp(hash, entry->sha1, ENTRY_HASH_SIZE) != 0;
			if (entry->changed && atomic_fetch_add(&job->changed, 1) + 1 > job->limit)
				atomic_store(&job->over_limit, true);
		}
	}
	if (parent.fd >= 0)
		close(parent.fd);
	free(parent.path);
	free(buffer);
	read_identity(false);
	return NULL;
}

void sync_remember(int dest_fd, char *const *paths, size_t count, struct hash_cache *cache)
{
	struct diff_job job = {.dest_fd = dest_fd, .cache = cache};
	struct parent_dir parent = {.fd = -1};
	void *buffer = xmalloc(READ_BUFFER_SIZE);
	for (size_t i = 0; i < count; i++) {
		const char *slash = strrchr(paths[i], '/');
		int parent_fd =
			parent_for(&job, &parent, paths[i], slash ? (size_t)(slash - paths[i]) : 0);
		unsigned char hash[ENTRY_HASH_SIZE];
		if (parent_fd >= 0)
			hash_entry(&job, parent_fd, slash ? slash + 1 : paths[i], hash, buffer);
	}
	if (parent.fd >= 0)
		close(parent.fd);
	free(parent.path);
	free(buffer);
}

/* Splits the manifest into entries; false with a message naming the line. */
static bool parse_manifest(const char *manifest, size_t length, struct diff_job *job, char *arena,
			   struct sync_diff_result *result)
{
	size_t capacity = 0, line_number = 0;
	for (size_t i = 0; i < length; i++)
		capacity += manifest[i] == '\n';
	job->entries = xcalloc(capacity + 1, sizeof *job->entries);
	const char *line = manifest, *end = manifest + length;
	while (line < end) {
		const char *newline = memchr(line, '\n', (size_t)(end - line));
		size_t line_length = newline ? (size_t)(newline - line) : (size_t)(end - line);
		line_number++;
		if (line_length > 0 && !(line_length == 1 && line[0] == '\r')) {
			struct diff_entry *entry = &job->entries[job->entry_count++];
			size_t path_length;
			const char *error = manifest_parse_line(line, line_length, entry->sha1,
								arena, &path_length);
			if (error) {
				snprintf(result->message, sizeof result->message,
					 "manifest line %zu %s", line_number, error);
				return false;
			}
			entry->path = arena;
			entry->path_length = path_length;
			arena += path_length + 1;
		}
		line = newline ? newline + 1 : end;
	}
	return true;
}

static void build_answer(struct diff_job *job, struct sync_diff_result *result)
{
	result->answer = cJSON_CreateObject();
	if (job->dest_fd < 0 || atomic_load(&job->over_limit)) {
		cJSON_AddBoolToObject(result->answer, "all", true);
		return;
	}
	cJSON *changed = cJSON_AddArrayToObject(result->answer, "changed");
	char hex[2 * 4096 + 1];
	for (size_t i = 0; i < job->entry_count; i++) {
		const struct diff_entry *entry = &job->entries[i];
		if (!entry->changed)
			continue;
		if (entry->path_length > 4096) {
			char *long_hex = xmalloc(2 * entry->path_length + 1);
			manifest_hex_encode(entry->path, entry->path_length, long_hex);
			cJSON_AddItemToArray(changed, cJSON_CreateString(long_hex));
			free(long_hex);
			continue;
		}
		manifest_hex_encode(entry->path, entry->path_length, hex);
		cJSON_AddItemToArray(changed, cJSON_CreateString(hex));
	}
}

void sync_diff_run(int dest_fd, const char *manifest, size_t length, unsigned long limit,
		   struct hash_cache *cache, int threads, struct sync_diff_result *result)
{
	memset(result, 0, sizeof *result);
	struct diff_job job = {.dest_fd = dest_fd, .limit = limit, .cache = cache};
	char *arena = xmalloc(length / 2 + length / 40 + 2);
	if (!parse_manifest(manifest, length, &job, arena, result)) {
		result->status = SYNC_BAD_REQUEST;
	} else {
		result->status = SYNC_OK;
		if (dest_fd >= 0 && job.entry_count > 0) {
			hash_cache_reserve(cache, job.entry_count);
			if (threads < 1)
				threads = 1;
			if ((size_t)threads > job.entry_count / BATCH + 1)
				threads = (int)(job.entry_count / BATCH + 1);
			pthread_t helpers[8];
			int started = 0;
			for (int i = 1; i < threads && i < 8; i++)
				if (pthread_create(&helpers[started], NULL, diff_worker, &job) == 0)
					started++;
			diff_worker(&job);
			for (int i = 0; i < started; i++)
				pthread_join(helpers[i], NULL);
		}
		if (atomic_load(&job.identity_failed)) {
			result->status = SYNC_FAILED;
			snprintf(result->message, sizeof result->message,
				 "the diff could not take the box user's identity");
		} else {
			build_answer(&job, result);
		}
	}
	result->entries = job.entry_count;
	result->hashed = atomic_load(&job.hashed);
	result->cache_hits = atomic_load(&job.cache_hits);
	free(job.entries);
	free(arena);
}
