/* engines.c: PostgreSQL and MySQL as psbx-testdb starts them (engines.h). */
#include "engines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker-cli.h"
#include "mywire.h"
#include "pgwire.h"
#include "xalloc.h"

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

/* Over the protocol, from the maintenance database: DROP DATABASE may not
 * share a transaction with anything, so each statement is a query of its
 * own; WITH (FORCE) ends the sessions a test left open (PostgreSQL 13 and
 * later). The copy of the template is made file by file (STRATEGY
 * FILE_COPY, PostgreSQL 15 and later) rather than page by page through the
 * WAL, the default, which costs more for a template this small; a server
 * that does not know the option makes it its way. */
static bool postgres_recreate(const struct engine_server *server, const char *database, char *error,
			      size_t size)
{
	char *drop = xasprintf("DROP DATABASE IF EXISTS \"%s\" WITH (FORCE)", database);
	char *create = xasprintf("CREATE DATABASE \"%s\" OWNER \"" TESTDB_USER "\"", database);
	char *create_by_files = xasprintf("%s STRATEGY FILE_COPY", create);
	const char *const statements[] = {drop, create_by_files, NULL};
	bool done = pgwire_run(server->host_port, TESTDB_USER, server->password, "postgres",
			       statements, error, size);
	if (!done && strstr(error, "strategy")) {
		const char *const plain[] = {create, NULL};
		done = pgwire_run(server->host_port, TESTDB_USER, server->password, "postgres",
				  plain, error, size);
	}
	free(drop);
	free(create);
	free(create_by_files);
	return done;
}

static bool postgres_answers(const char *host_port, char *detail, size_t size)
{
	return pgwire_answers(host_port, TESTDB_USER, TESTDB_DATABASE, detail, size);
}

const struct engine engine_postgres = {
	.name = "postgres",
	.default_image = "postgres:16",
	.port = "5432",
	.data_dir = "/var/lib/postgresql/data",
	.run_env = postgres_run_env,
	.url = postgres_url,
	.recreate = postgres_recreate,
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

/* The same with the image's own client in the container, over its socket:
 * for a root whose login method mywire does not speak. */
static bool mysql_recreate_in_container(const struct engine_server *server, const char *sql,
					char *error, size_t size)
{
	char *env = xasprintf("MYSQL_PWD=%s", server->password);
	const char *args[] = {"exec", "-e", env, server->container, "mysql", "-uroot",
			      "-e",   sql,  NULL};
	struct docker_result result = docker_call(args, false);
	bool done = result.status == 0;
	if (!done)
		snprintf(error, size, "%s", *result.err ? result.err : result.out);
	docker_result_free(&result);
	free(env);
	return done;
}

/* As root, over the protocol when root logs in with the native method (MariaDB,
 * an image set so), else in the container. The grant lets the test user use a
 * database made after the image's set-up (gotest's). */
static bool mysql_recreate(const struct engine_server *server, const char *database, char *error,
			   size_t size)
{
	char *drop = xasprintf("DROP DATABASE IF EXISTS `%s`", database);
	char *create = xasprintf("CREATE DATABASE `%s`", database);
	char *grant = xasprintf("GRANT ALL ON `%s`.* TO '" TESTDB_USER "'@'%%'", database);
	const char *const statements[] = {drop, create, grant, NULL};
	enum mywire_outcome outcome =
		mywire_run(server->host_port, "root", server->password, statements, error, size);
	bool done = outcome == MYWIRE_DONE;
	if (outcome == MYWIRE_OTHER_METHOD) {
		char *sql = xasprintf("%s; %s; %s", drop, create, grant);
		done = mysql_recreate_in_container(server, sql, error, size);
		free(sql);
	}
	free(drop);
	free(create);
	free(grant);
	return done;
}

const struct engine engine_mysql = {
	.name = "mysql",
	.default_image = "mysql:8.0",
	.port = "3306",
	.data_dir = "/var/lib/mysql",
	.run_env = mysql_run_env,
	.url = mysql_url,
	.recreate = mysql_recreate,
	.answers = mywire_answers,
};

const struct engine *engine_named(const char *name)
{
	if (strcmp(name, engine_postgres.name) == 0)
		return &engine_postgres;
	if (strcmp(name, engine_mysql.name) == 0)
		return &engine_mysql;
	return NULL;
}
