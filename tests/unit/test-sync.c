/* The diff engine and the hash cache on a real temporary tree. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "entry-hash.h"
#include "hash-cache.h"
#include "manifest.h"
#include "sync.h"
#include "work-path.h"

#include "check.h"

static void write_file(int dir, const char *name, const char *text, mode_t mode)
{
	int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (write(fd, text, strlen(text)) < 0)
		abort();
	fchmod(fd, mode);
	close(fd);
}

static void hex_of(const unsigned char hash[20], char out[41])
{
	manifest_hex_encode(hash, 20, out);
}

static void add_line(char **manifest, const unsigned char hash[20], const char *path)
{
	char sha[41], hexpath[512];
	hex_of(hash, sha);
	manifest_hex_encode(path, strlen(path), hexpath);
	size_t old = *manifest ? strlen(*manifest) : 0;
	*manifest = realloc(*manifest, old + strlen(sha) + strlen(hexpath) + 3);
	sprintf(*manifest + old, "%s %s\n", sha, hexpath);
}

static char *diff(int dest, const char *manifest, struct hash_cache *cache, unsigned long limit,
		  struct sync_diff_result *result)
{
	sync_diff_run(dest, manifest, strlen(manifest), limit, cache, 2, result);
	char *text = result->answer ? cJSON_PrintUnformatted(result->answer) : strdup("null");
	cJSON_Delete(result->answer);
	return text;
}

static bool refuse_all(void *arg, const struct stat *link)
{
	(void)link;
	return *(bool *)arg;
}

static bool same_file(int a_dir, const char *a, int fd)
{
	struct stat one, two;
	return fstatat(a_dir, a, &one, 0) == 0 && fstat(fd, &two) == 0 &&
	       one.st_ino == two.st_ino && one.st_dev == two.st_dev;
}

/* work_path_walk: the upload's resolution, one component at a time. */
static void test_walk(int dest)
{
	int root = open("/", O_PATH | O_DIRECTORY);
	bool refuse = false;
	struct work_path_walk how = {
		.root_fd = root, .create = true, .refuse_link = refuse_all, .arg = &refuse};
	mkdirat(dest, "w", 0755);
	int w = openat(dest, "w", O_PATH | O_DIRECTORY);
	int fd = work_path_walk(w, "a/b", &how); /* the path's own names are made */
	CHECK(fd >= 0 && same_file(w, "a/b", fd));
	close(fd);
	symlinkat("a", w, "l");
	fd = work_path_walk(w, "l/b", &how);
	CHECK(fd >= 0 && same_file(w, "a/b", fd));
	close(fd);
	fd = work_path_walk(w, "l/c/d", &how); /* own names below a link: made where it leads */
	CHECK(fd >= 0 && same_file(w, "a/c/d", fd));
	close(fd);
	symlinkat("../w/a/b", w, "up"); /* ".." in a target: the link's directory's parent */
	fd = work_path_walk(w, "up", &how);
	CHECK(fd >= 0 && same_file(w, "a/b", fd));
	close(fd);
	symlinkat("/tmp", w, "abs");
	fd = work_path_walk(w, "abs", &how);
	CHECK(fd >= 0 && same_file(root, "tmp", fd));
	close(fd);
	/* A target's own names are never made: only the path's. */
	symlinkat("missing/x", w, "dangling");
	CHECK(work_path_walk(w, "dangling/y", &how) < 0 && errno == ENOENT);
	struct stat st;
	CHECK(fstatat(w, "missing", &st, 0) < 0);
	symlinkat("loop", w, "loop");
	CHECK(work_path_walk(w, "loop/x", &how) < 0 && errno == ELOOP);
	write_file(w, "file", "x", 0644);
	CHECK(work_path_walk(w, "file/x", &how) < 0 && errno == ENOTDIR);
	refuse = true; /* a link the caller refuses (the archive's own) */
	CHECK(work_path_walk(w, "l/b", &how) < 0 && errno == EXDEV);
	fd = work_path_walk(w, "a/b", &how);
	CHECK(fd >= 0);
	close(fd);
	how.create = false;
	CHECK(work_path_walk(w, "a/new", &how) < 0 && errno == ENOENT);
	close(w);
	close(root);
}

/* A diff of many entries on four threads, as the worker runs one: cold
 * (every thread stores hashes into the shared cache), warm (lookups only),
 * and over the limit (the threads stop together). Some files are big enough
 * to be hashed from a mapping. tests/tsan/run-archive runs this under
 * ThreadSanitizer, which sees a race only where threads really meet. */
static void test_threads(const char *root)
{
	char path[300];
	snprintf(path, sizeof path, "%s/many", root);
	mkdir(path, 0755);
	int many = open(path, O_RDONLY | O_DIRECTORY);
	sync_map_files();
	char *manifest = NULL, *big = malloc(40000);
	memset(big, 'b', 40000);
	big[39999] = '\0';
	unsigned char wrong[20] = {0};
	for (int i = 0; i < 3000; i++) {
		char dir[16], name[32], text[32];
		snprintf(dir, sizeof dir, "d%d", i % 30);
		mkdirat(many, dir, 0755);
		snprintf(name, sizeof name, "d%d/f%d", i % 30, i);
		snprintf(text, sizeof text, "file %d\n", i);
		write_file(many, name, i % 100 == 1 ? big : text, 0644);
		unsigned char hash[20];
		char buffer[4096];
		int fd = openat(many, name, O_RDONLY);
		entry_hash_fd(fd, 0644, buffer, sizeof buffer, hash);
		close(fd);
		add_line(&manifest, i % 10 == 0 ? wrong : hash, name);
	}
	free(big);
	usleep(30000); /* past the files' clock tick: their records are kept */
	snprintf(path, sizeof path, "%s.many-cache", root);
	struct hash_cache *cache = hash_cache_open(path);
	struct sync_diff_result result;
	for (int round = 0; round < 2; round++) {
		sync_diff_run(many, manifest, strlen(manifest), 400, cache, 4, &result);
		cJSON *changed = cJSON_GetObjectItem(result.answer, "changed");
		CHECKF(cJSON_GetArraySize(changed) == 300, "round %d: %d changed", round,
		       cJSON_GetArraySize(changed));
		CHECKF(round == 0 ? result.hashed == 3000 && result.cache_hits == 0
				  : result.hashed == 0 && result.cache_hits == 3000,
		       "round %d: %lu hashed, %lu from the cache", round, result.hashed,
		       result.cache_hits);
		cJSON_Delete(result.answer);
	}
	char *answer = diff(many, manifest, cache, 100, &result);
	CHECK(strcmp(answer, "{\"all\":true}") == 0);
	free(answer);
	hash_cache_close(cache);
	unlink(path);
	free(manifest);
	close(many);
}

int main(void)
{
	char root[] = "/tmp/test-sync-XXXXXX";
	if (!mkdtemp(root))
		return 1;
	int dest = open(root, O_RDONLY | O_DIRECTORY);
	mkdirat(dest, "sub", 0755);
	write_file(dest, "a.sh", "echo hi\n", 0755);
	write_file(dest, "sub/b.txt", "bee", 0644);
	symlinkat("nowhere", dest, "dangling");

	/* The rule, by hand: the known sha1 of "f:0:" + "bee". */
	unsigned char hash[20];
	char sha[41];
	int fd = openat(dest, "sub/b.txt", O_RDONLY);
	char buffer[4096];
	entry_hash_fd(fd, 0644, buffer, sizeof buffer, hash);
	close(fd);
	hex_of(hash, sha);
	CHECK(strcmp(sha, "061b9c87fefc41a0add0a0c2ca36866730bd3bcd") == 0 ||
	      (fprintf(stderr, "got %s\n", sha), 0));
	struct entry_hash incremental;
	entry_hash_begin_file(&incremental, 0100744);
	entry_hash_update(&incremental, "x", 1);
	unsigned char other[20];
	entry_hash_finish(&incremental, other);
	hex_of(other, sha); /* sha1("f:100:x") */
	CHECK(strcmp(sha, "4a50744b80d28db3b345f19ba09561c4db71b2f2") == 0 ||
	      (fprintf(stderr, "got %s\n", sha), 0));

	char *manifest = NULL;
	unsigned char a_hash[20], link_hash[20], wrong[20] = {0};
	fd = openat(dest, "a.sh", O_RDONLY);
	entry_hash_fd(fd, 0755, buffer, sizeof buffer, a_hash);
	close(fd);
	entry_hash_symlink("nowhere", 7, link_hash);
	add_line(&manifest, a_hash, "a.sh");
	add_line(&manifest, hash, "sub/b.txt");
	add_line(&manifest, link_hash, "dangling");
	add_line(&manifest, wrong, "missing");
	add_line(&manifest, wrong, "sub"); /* a directory where the manifest has a file */

	char cache_path[256];
	snprintf(cache_path, sizeof cache_path, "%s.cache", root);
	struct hash_cache *cache = hash_cache_open(cache_path);
	CHECK(cache != NULL);
	/* Past the clock tick the files were written in: not racy. */
	usleep(30000);
	struct sync_diff_result result;
	char *answer = diff(dest, manifest, cache, 400, &result);
	CHECK(strcmp(answer, "{\"changed\":[\"6d697373696e67\",\"737562\"]}") == 0 ||
	      (fprintf(stderr, "got %s\n", answer), 0));
	CHECK(result.hashed == 2 && result.cache_hits == 0);
	free(answer);
	answer = diff(dest, manifest, cache, 400, &result);
	CHECK(result.hashed == 0 && result.cache_hits == 2);
	free(answer);
	/* A file whose mtime is not older than its hash is hashed every time. */
	struct timespec future[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = time(NULL) + 3600}};
	utimensat(dest, "a.sh", future, 0);
	usleep(30000);
	for (int i = 0; i < 2; i++) {
		answer = diff(dest, manifest, cache, 400, &result);
		CHECK(result.hashed == 1 && result.cache_hits == 1);
		free(answer);
	}
	write_file(dest, "sub/b.txt", "BEE", 0644);
	answer = diff(dest, manifest, cache, 400, &result);
	CHECK(strstr(answer, "\"7375622f622e747874\"") != NULL);
	free(answer);
	fchmodat(dest, "a.sh", 0644, 0);
	answer = diff(dest, manifest, cache, 1, &result);
	CHECK(strcmp(answer, "{\"all\":true}") == 0 || (fprintf(stderr, "got %s\n", answer), 0));
	free(answer);
	answer = diff(-1, manifest, cache, 400, &result);
	CHECK(strcmp(answer, "{\"all\":true}") == 0);
	free(answer);

	/* Hostile manifests. */
	answer = diff(dest, "da39a3ee5e6b4b0d3255bfef95601890afd80709 2e2e2f78\n", cache, 400,
		      &result);
	CHECK(result.status == SYNC_BAD_REQUEST && strstr(result.message, "line 1"));
	free(answer);
	answer = diff(dest, "\n\nnot a line\n", cache, 400, &result);
	CHECK(result.status == SYNC_BAD_REQUEST && strstr(result.message, "line 3"));
	free(answer);
	/* A directory link of the box's leading out of dest is read through,
	 * as the client's compare reads it: out/sub/c.txt is sub/c.txt. */
	write_file(dest, "sub/c.txt", "bee", 0644);
	char out_target[300];
	snprintf(out_target, sizeof out_target, "%s", root);
	symlinkat(out_target, dest, "out");
	char *through = NULL;
	add_line(&through, hash, "out/sub/c.txt");
	add_line(&through, hash, "out/nothing/b.txt");
	answer = diff(dest, through, cache, 400, &result);
	CHECK(strcmp(answer, "{\"changed\":[\"6f75742f6e6f7468696e672f622e747874\"]}") == 0 ||
	      (fprintf(stderr, "got %s\n", answer), 0));
	free(answer);
	free(through);
	unlinkat(dest, "out", 0);

	test_walk(dest);
	test_threads(root);

	const char *why = NULL;
	char *relative = work_path_relative("/work", "/work/app/", &why);
	CHECK(relative && strcmp(relative, "app") == 0);
	free(relative);
	CHECK(work_path_relative("/work", "/workx", &why) == NULL);
	CHECK(work_path_relative("/work", "a/../..", &why) == NULL);
	relative = work_path_relative("/work", "/work", &why);
	CHECK(relative && relative[0] == '\0');
	free(relative);

	hash_cache_close(cache);
	free(manifest);
	char command[512];
	snprintf(command, sizeof command, "rm -rf %s %s", root, cache_path);
	CHECK(system(command) == 0);
	return check_done("sync");
}
