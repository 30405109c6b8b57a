/* gotest.c: `psbx-testdb gotest`, a database per Go package (testdb.h).
 *
 * One server for the whole run; go test runs every package's test binary
 * through `psbx-testdb _exec` (its -exec flag), which makes that package a
 * database of its own, empty, and runs the binary with DATABASE_URL naming
 * it. Packages run side by side as go test schedules them; none sees
 * another's tables. The server is removed when go test ends, however it
 * ends. */
#include "testdb.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "manifest.h"
#include "sha1.h"
#include "xalloc.h"

extern char **environ;

/* Names the run's server for the wrappers go test starts. */
#define GOTEST_ENV "PSBX_TESTDB_GOTEST"

/* go test runs in a process group of its own, so a signal reaches it and
 * every test binary it started, not go test alone (which exits on SIGTERM
 * leaving its binaries running). */
static pid_t go_group;
/* A signal before go test started: the run ends once the server is up. */
static volatile sig_atomic_t stopped_by;

static void forward_signal(int signal_number)
{
	if (go_group > 0)
		kill(-go_group, signal_number);
	else
		stopped_by = signal_number;
}

/* Ctrl-C, Ctrl-\, SIGTERM and SIGHUP are passed on to go test's group; we
 * outlive it to remove the server. */
static void watch_signals(void)
{
	struct sigaction forward = {.sa_handler = forward_signal};
	sigemptyset(&forward.sa_mask);
	int signals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
	for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
		sigaction(signals[i], &forward, NULL);
}

static bool is_exec_flag(const char *arg)
{
	return strcmp(arg, "-exec") == 0 || strcmp(arg, "--exec") == 0 ||
	       strncmp(arg, "-exec=", 6) == 0 || strncmp(arg, "--exec=", 7) == 0;
}

/* go test ARGS with our wrapper; its exit status. */
static int run_go_test(int argc, char **argv)
{
	char self[4096];
	ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
	if (length <= 0) {
		testdb_say("cannot find my own program: %s", strerror(errno));
		return 1;
	}
	self[length] = '\0';
	char *exec_value = xasprintf("%s _exec", self);
	char **go_argv = xcalloc((size_t)argc + 5, sizeof *go_argv);
	size_t at = 0;
	go_argv[at++] = (char *)"go";
	go_argv[at++] = (char *)"test";
	go_argv[at++] = (char *)"-exec";
	go_argv[at++] = exec_value;
	for (int i = 0; i < argc; i++)
		go_argv[at++] = argv[i];
	posix_spawnattr_t attributes;
	posix_spawnattr_init(&attributes);
	posix_spawnattr_setpgroup(&attributes, 0);
	posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
	pid_t pid;
	int spawned = posix_spawnp(&pid, "go", NULL, &attributes, go_argv, environ);
	posix_spawnattr_destroy(&attributes);
	if (spawned == 0)
		go_group = pid;
	int status = 1;
	if (spawned != 0) {
		testdb_say("cannot run go: %s",
			   spawned == ENOENT ? "no `go` on PATH" : strerror(spawned));
	} else {
		int wait_status;
		while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR)
			;
		status = WIFEXITED(wait_status)     ? WEXITSTATUS(wait_status)
			 : WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status)
						    : 1;
	}
	/* What go test left behind (a binary past its timeout) must not
	 * outlive the server it uses. */
	if (go_group > 0)
		kill(-go_group, SIGKILL);
	go_group = 0;
	free(go_argv);
	free(exec_value);
	return status;
}

int gotest_main(int argc, char **argv)
{
	/* The run's server has an env file like any (its wrappers read it,
	 * not Docker), but its URL is not printed: stdout is go test's. */
	struct testdb_options options = {.engine = &engine_postgres};
	int first = 1;
	for (; first < argc; first++) {
		if (strcmp(argv[first], "--mysql") == 0) {
			options.engine = &engine_mysql;
		} else if (strcmp(argv[first], "--image") == 0 && first + 1 < argc) {
			options.image = argv[++first];
		} else if (strncmp(argv[first], "--image=", 8) == 0) {
			options.image = argv[first] + 8;
		} else {
			break;
		}
	}
	for (int i = first; i < argc; i++) {
		if (is_exec_flag(argv[i])) {
			testdb_say("gotest runs the tests through its own -exec; drop yours");
			return 2;
		}
	}
	char name[32];
	snprintf(name, sizeof name, "gotest-%ld", (long)getpid());
	setenv(GOTEST_ENV, name, 1);
	watch_signals();
	if (testdb_up(name, &options) != 0)
		return 1;
	int status = stopped_by ? 128 + stopped_by : run_go_test(argc - first, argv + first);
	testdb_remove(name);
	return status;
}

/* The package's database: pkg_<folder>_<8 hex of the folder's path>, so
 * two packages named alike in different folders differ, and a name stays
 * within PostgreSQL's 63 bytes and MySQL's 64. */
static char *package_database(const char *folder)
{
	const char *base = strrchr(folder, '/');
	base = base ? base + 1 : folder;
	char readable[25];
	size_t length = 0;
	for (const char *c = base; *c && length < sizeof readable - 1; c++) {
		char lower = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
		bool keep = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9');
		readable[length++] = keep ? lower : '_';
	}
	readable[length] = '\0';
	uint8_t digest[SHA1_DIGEST_SIZE];
	sha1_digest(folder, strlen(folder), digest);
	char hash[9];
	manifest_hex_encode(digest, 4, hash);
	return xasprintf("pkg_%s_%s", readable, hash);
}

int gotest_exec_main(int argc, char **argv)
{
	const char *name = getenv(GOTEST_ENV);
	if (argc < 2 || !name || !*name) {
		testdb_say("_exec is what `psbx-testdb gotest` has go test run; use gotest");
		return 2;
	}
	struct testdb db;
	int found = testdb_locate(name, &db);
	if (found != 1) {
		if (found == 0)
			testdb_say("the run's server %s is not running", name);
		return 1;
	}
	char folder[4096];
	if (!getcwd(folder, sizeof folder)) {
		testdb_say("getcwd: %s", strerror(errno));
		testdb_free(&db);
		return 1;
	}
	char *database = package_database(folder);
	bool made = testdb_recreate(name, &db, database);
	char *url = made ? db.engine->url(db.password, db.host_port, database) : NULL;
	free(database);
	testdb_free(&db);
	if (!made)
		return 1;
	setenv("DATABASE_URL", url, 1);
	free(url);
	execv(argv[1], argv + 1);
	testdb_say("cannot run %s: %s", argv[1], strerror(errno));
	return 1;
}
