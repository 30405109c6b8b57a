/* ctl.h: what a boxctl subcommand file sees.
 *
 * Each area adds its subcommands in its own file (ctl-health.c, ctl-exec.c,
 * ...) exporting a table of `struct ctl_command`, registered once in
 * boxctl.c. Exit status: 0 success, 1 an API error (its message printed),
 * 2 a usage error. Human output by default; --json prints the API's JSON. */
#ifndef BOXD_CTL_H
#define BOXD_CTL_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "client.h"

enum ctl_exit { CTL_OK = 0, CTL_API_ERROR = 1, CTL_USAGE = 2 };

struct ctl {
	const char *socket_path;
	bool json;             /* --json: print the API's JSON as it is */
	struct client *client; /* connected on first use */
};

struct ctl_command {
	const char *name;  /* "health", "procs", ... */
	const char *usage; /* one or more lines, shown by `boxctl --help` */
	int (*run)(struct ctl *ctl, int argc, char **argv); /* argv[0] is the name */
};

/* Calls the API with an optional JSON body. On 2xx returns CTL_OK and the
 * parsed answer in *answer (NULL for an empty body; caller frees). On an API
 * error prints "boxctl: <message>" to stderr and returns CTL_API_ERROR; on a
 * transport failure prints why and returns CTL_API_ERROR. */
int ctl_call(struct ctl *ctl, const char *method, const char *path, const cJSON *body,
	     cJSON **answer);
/* As ctl_call with a body of another type (text/plain, ...). */
int ctl_call_body(struct ctl *ctl, const char *method, const char *path, const char *content_type,
		  const void *body, size_t body_length, cJSON **answer);
/* As ctl_call but the raw response, for non-JSON answers (logs, images). */
int ctl_call_raw(struct ctl *ctl, const char *method, const char *path, const char *content_type,
		 const void *body, size_t body_length, const char *extra_headers,
		 struct client_response *response);
/* Prints an error answer's sentence as ctl_call does ("boxctl: <message>
 * (<code>)"), or its status when the body has none. */
void ctl_print_api_error(const struct client_response *response);
/* The connected client (connecting on first use), or NULL after printing why. */
struct client *ctl_client(struct ctl *ctl);
/* Prints `json` pretty when --json was given and returns true; else false. */
bool ctl_print_json(struct ctl *ctl, const cJSON *json);
/* Prints "boxctl <name>: <message>" and returns CTL_USAGE. */
int ctl_usage_error(const char *command, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Reads `fd` to its end into a NUL-terminated buffer (*length bytes, which
 * may hold NULs); NULL with errno on a read error. Caller frees. */
char *ctl_read_all(int fd, size_t *length);
/* Percent-encodes `text` for a query string; caller frees. */
char *ctl_url_encode(const char *text);

#endif
