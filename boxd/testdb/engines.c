/* engines.c: PostgreSQL and MySQL as psbx-testdb starts them (engines.h). */
#include "engines.h"

#include <stdlib.h>
#include <string.h>

#include "probe.h"
#include "xalloc.h"

static char **args_of(const char *const *list)
{
	size_t count = 0;
	while (list[count])
		count++;
	char **args = xcalloc(count + 1, sizeof *args);
	for (size_t i = 0; i < count; i++)
		args[i] = xstrdup(list[i]);
	return args;
}

void engine_args_free(char **args)
{
	if (!args)
		return;
	for (char **arg = args; *arg; arg++)
		free(*arg);
	free(args);
}

static void push_env(const char **args, size_t *count, char *assignment)
{
	args[(*count)++] = "-e";
	args[(*count)++] = assignment;
}

/* ---- PostgreSQL ---- */

static void postgres_run_env(const char *password, const char **args, size_t *count)
{
	push_env(args, count, xstrdup("POSTGRES_USER=" TESTDB_USER));
	push_env(args, count, xasprintf("POSTGRES_PASSWORD=%s", password));
	push_env(args, count, xstrdup("POSTGRES_DB=" TESTDB_DATABASE));
}

static char *postgres_url(const char *password, const char *host_port, const char *database)
{
	return xasprintf("postgres://" TESTDB_USER ":%s@%s/%s?sslmode=disable", password, host_port,
			 database);
}

/* Two -c, two statements: DROP DATABASE may not share a transaction with
 * anything, and psql sends each -c as one. WITH (FORCE) ends the sessions a
 * test left open (PostgreSQL 13 and later). */
static char **postgres_recreate_args(const char *password, const char *database)
{
	char *env = xasprintf("PGPASSWORD=%s", password);
	char *drop = xasprintf("DROP DATABASE IF EXISTS \"%s\" WITH (FORCE)", database);
	char *create = xasprintf("CREATE DATABASE \"%s\" OWNER \"" TESTDB_USER "\"", database);
	const char *list[] = {
		"-e",   env,         "psql", "-X",       "-q", "-v", "ON_ERROR_STOP=1",
		"-U",   TESTDB_USER, "-d",   "postgres", "-c", drop, "-c",
		create, NULL};
	char **args = args_of(list);
	free(env);
	free(drop);
	free(create);
	return args;
}

static bool postgres_answers(const char *host_port, char *detail, size_t size)
{
	return probe_postgres(host_port, TESTDB_USER, TESTDB_DATABASE, detail, size);
}

const struct engine engine_postgres = {
	.name = "postgres",
	.default_image = "postgres:16",
	.port = "5432",
	.data_dir = "/var/lib/postgresql/data",
	.run_env = postgres_run_env,
	.url = postgres_url,
	.recreate_args = postgres_recreate_args,
	.answers = postgres_answers,
};

/* ---- MySQL ---- */

static void mysql_run_env(const char *password, const char **args, size_t *count)
{
	push_env(args, count, xasprintf("MYSQL_ROOT_PASSWORD=%s", password));
	push_env(args, count, xstrdup("MYSQL_USER=" TESTDB_USER));
	push_env(args, count, xasprintf("MYSQL_PASSWORD=%s", password));
	push_env(args, count, xstrdup("MYSQL_DATABASE=" TESTDB_DATABASE));
}

static char *mysql_url(const char *password, const char *host_port, const char *database)
{
	return xasprintf("mysql://" TESTDB_USER ":%s@%s/%s", password, host_port, database);
}

/* As root over the container's own socket; the grant lets the test user
 * use a database made after the image's set-up (gotest's). */
static char **mysql_recreate_args(const char *password, const char *database)
{
	char *env = xasprintf("MYSQL_PWD=%s", password);
	char *sql = xasprintf("DROP DATABASE IF EXISTS `%s`; CREATE DATABASE `%s`; "
			      "GRANT ALL ON `%s`.* TO '" TESTDB_USER "'@'%%'",
			      database, database, database);
	const char *list[] = {"-e", env, "mysql", "-uroot", "-e", sql, NULL};
	char **args = args_of(list);
	free(env);
	free(sql);
	return args;
}

const struct engine engine_mysql = {
	.name = "mysql",
	.default_image = "mysql:8.0",
	.port = "3306",
	.data_dir = "/var/lib/mysql",
	.run_env = mysql_run_env,
	.url = mysql_url,
	.recreate_args = mysql_recreate_args,
	.answers = probe_mysql,
};

const struct engine *engine_named(const char *name)
{
	if (strcmp(name, engine_postgres.name) == 0)
		return &engine_postgres;
	if (strcmp(name, engine_mysql.name) == 0)
		return &engine_mysql;
	return NULL;
}
