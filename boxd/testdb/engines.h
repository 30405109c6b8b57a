/* engines.h: the two database servers psbx-testdb starts, described once:
 * the image, the port, where the data lives (a tmpfs there), how the image
 * is told the user and password, the URL a client gets, and how a database
 * is made empty again. Both follow the official images' contract
 * (postgres:16, mysql:8.0): an image made elsewhere that reads the same
 * variables works as well (--image). */
#ifndef PSBX_ENGINES_H
#define PSBX_ENGINES_H

#include <stdbool.h>
#include <stddef.h>

/* The user, and the database `up` makes, in every server. */
#define TESTDB_USER "test"
#define TESTDB_DATABASE "test"

/* A running server, as reset and gotest reach it. */
struct engine_server {
	const char *container;
	const char *host_port; /* "127.0.0.1:PORT" */
	const char *password;
};

struct engine {
	const char *name;          /* "postgres" | "mysql" (a container label) */
	const char *default_image; /* when neither --image nor PSBX_TESTDB_IMAGE */
	const char *port;          /* the server's port in the container */
	const char *data_dir;      /* the tmpfs mount: the data lives in memory */
	/* Appends `-e NAME=VALUE` pairs for docker run to `args` at `*count`
	 * (at most 10 strings; they are allocated). */
	void (*run_env)(const char *password, const char **args, size_t *count);
	/* The URL a client connects with (caller frees). */
	char *(*url)(const char *password, const char *host_port, const char *database);
	/* Drops `database` in `server` when it exists and makes it anew,
	 * empty, the user's; false with why in `error`. */
	bool (*recreate)(const struct engine_server *server, const char *database, char *error,
			 size_t size);
	/* One look at 127.0.0.1:`host_port`: true once the server itself
	 * answers a client (not the port's proxy alone); false with what it
	 * said, or why not, in `detail`. */
	bool (*answers)(const char *host_port, char *detail, size_t size);
};

extern const struct engine engine_postgres;
extern const struct engine engine_mysql;

/* The engine a container's label names, or NULL. */
const struct engine *engine_named(const char *name);

#endif
