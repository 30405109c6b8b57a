/* psbx-testdb: a fresh database per test run (docs/testdb.md, man
 * psbx-testdb(1)).
 *
 *   psbx-testdb up NAME [--mysql] [--image IMAGE]
 *   psbx-testdb reset NAME | down NAME | ls
 *   psbx-testdb gotest [--mysql] [--image IMAGE] [go test flags] ./...
 *
 * Exit status: 0 done, 1 it failed (said on stderr), 2 a usage error. */
#include <stdio.h>
#include <string.h>

#include "docker-cli.h"
#include "testdb.h"

#define USAGE                                                                             \
	"usage: psbx-testdb up NAME [--mysql] [--image IMAGE]\n"                          \
	"       psbx-testdb reset NAME\n"                                                 \
	"       psbx-testdb down NAME\n"                                                  \
	"       psbx-testdb ls\n"                                                         \
	"       psbx-testdb gotest [--mysql] [--image IMAGE] [go test flags] ./...\n"     \
	"A fresh PostgreSQL 16 (MySQL 8.0 with --mysql) in Docker, its data in memory;\n" \
	"up writes DATABASE_URL to $PSBX_TESTDB_DIR/NAME.env (/work/.sbx/testdb).\n"      \
	"See psbx-testdb(1).\n"

static int usage(const char *problem)
{
	if (problem)
		testdb_say("%s", problem);
	fputs(USAGE, stderr);
	return 2;
}

/* `up`'s arguments: NAME and its options in any order. */
static int parse_up(int argc, char **argv, const char **name, struct testdb_options *options)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--mysql") == 0) {
			options->engine = &engine_mysql;
		} else if (strcmp(argv[i], "--postgres") == 0) {
			options->engine = &engine_postgres;
		} else if (strcmp(argv[i], "--image") == 0) {
			if (i + 1 >= argc)
				return usage("--image needs an image");
			options->image = argv[++i];
		} else if (strncmp(argv[i], "--image=", 8) == 0) {
			options->image = argv[i] + 8;
		} else if (argv[i][0] == '-') {
			testdb_say("unknown option %s", argv[i]);
			return usage(NULL);
		} else if (*name) {
			return usage("up takes one NAME");
		} else {
			*name = argv[i];
		}
	}
	return *name ? 0 : usage("up needs a NAME");
}

/* What every command that reaches Docker checks first: NAME (when it has
 * one) is a name, and Docker answers. 0, or the exit status (said). */
static int refused(const char *name)
{
	char error[256];
	if (name && !testdb_name_valid(name, error, sizeof error)) {
		testdb_say("%s", error);
		return 2;
	}
	if (!docker_reachable(error, sizeof error)) {
		testdb_say("%s", error);
		return 1;
	}
	return 0;
}

/* The commands that take exactly NAME. */
static int run_named(const char *command, int argc, char **argv)
{
	if (argc != 2)
		return usage(NULL);
	const char *name = argv[1];
	int status = refused(name);
	if (status != 0)
		return status;
	if (strcmp(command, "reset") == 0)
		return testdb_reset(name);
	return testdb_down(name);
}

static int run_up(int argc, char **argv)
{
	const char *name = NULL;
	struct testdb_options options = {.engine = &engine_postgres, .print_url = true};
	int parsed = parse_up(argc, argv, &name, &options);
	if (parsed != 0)
		return parsed;
	int status = refused(name);
	return status != 0 ? status : testdb_up(name, &options);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(NULL);
	const char *command = argv[1];
	if (strcmp(command, "up") == 0)
		return run_up(argc - 1, argv + 1);
	if (strcmp(command, "reset") == 0 || strcmp(command, "down") == 0)
		return run_named(command, argc - 1, argv + 1);
	if (strcmp(command, "_exec") == 0)
		return gotest_exec_main(argc - 1, argv + 1);
	if (strcmp(command, "-h") == 0 || strcmp(command, "--help") == 0 ||
	    strcmp(command, "help") == 0) {
		fputs(USAGE, stdout);
		return 0;
	}
	if (strcmp(command, "ls") != 0 && strcmp(command, "gotest") != 0) {
		testdb_say("unknown command %s", command);
		return usage(NULL);
	}
	int status = refused(NULL);
	if (status != 0)
		return status;
	if (strcmp(command, "ls") == 0)
		return argc == 2 ? testdb_ls() : usage("ls takes no arguments");
	return gotest_main(argc - 1, argv + 1);
}
