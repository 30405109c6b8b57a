/* testdb.h: psbx-testdb's test databases: a server in a Docker container
 * per name, its data on a tmpfs, its URL in an env file under the work
 * dir (docs/testdb.md). The container is the record: its labels hold the
 * name, the engine and the password, so there is no state of its own to
 * lose or to disagree with Docker. */
#ifndef PSBX_TESTDB_H
#define PSBX_TESTDB_H

#include <stdbool.h>
#include <stddef.h>

#include "engines.h"

#define TESTDB_PROGRAM "psbx-testdb"

/* What `up` is given. */
struct testdb_options {
	const struct engine *engine;
	const char *image; /* NULL: PSBX_TESTDB_IMAGE, else the engine's */
	bool print_url;    /* DATABASE_URL=... on stdout too (not gotest's) */
};

/* A server as its container describes it. */
struct testdb {
	char *container;
	const struct engine *engine;
	char *password;
	char *host_port; /* "127.0.0.1:PORT"; NULL while it is not running */
	bool running;
};

/* A line on stderr, "psbx-testdb: " first: every message of the program. */
void testdb_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The folder of the env files: $PSBX_TESTDB_DIR, else /work/.sbx/testdb. */
const char *testdb_dir(void);

/* A name is 1 to 48 of [a-z0-9_-], starting with a letter or digit (it
 * becomes part of a container's name and a file's). False with a sentence
 * for the user. */
bool testdb_name_valid(const char *name, char *error, size_t size);

/* The commands; each returns the process's exit status and has said what
 * went wrong on stderr. `up` writes NAME.env. */
int testdb_up(const char *name, const struct testdb_options *options);
int testdb_reset(const char *name);
int testdb_down(const char *name);
int testdb_ls(void);

/* Finds NAME's server by its container: 1 found, 0 none, -1 an error
 * (said on stderr). */
int testdb_find(const char *name, struct testdb *out);
/* NAME's running server, from its env file when there is one, else from
 * Docker: 1 found, 0 none running, -1 an error (said). */
int testdb_locate(const char *name, struct testdb *out);
void testdb_free(struct testdb *db);

/* Drops `database` in NAME's server `db` and makes it anew, empty; when
 * `db` (from an env file) no longer answers, asks Docker where the server
 * is now and tries there (updating `db`). False, said on stderr, when it
 * could not. */
bool testdb_recreate(const char *name, struct testdb *db, const char *database);

/* Removes NAME's container and env file (quietly: teardown paths). */
void testdb_remove(const char *name);

/* `gotest [--mysql] [--image I] [go test args]` and the per-package
 * wrapper go test runs the test binaries through (gotest.c). */
int gotest_main(int argc, char **argv);
int gotest_exec_main(int argc, char **argv);

#endif
