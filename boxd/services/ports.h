/* ports.h: GET /v1/ports's answer, every listening TCP socket in the box:
 * `{"ports": [{"port", "address", "pid", "command", "execId",
 * "container"}]}` (docs/api.md, "Ports", says what each field means).
 *
 * The box's own listeners come from sock_diag (sockets.h), those inside
 * Docker containers from /proc (ports-scan.h), their holders from
 * /proc/PID/fd, names and published ports from Docker (ports-docker.h).
 * The /proc walks run on a thread, Docker is asked through the loop: the
 * loop itself only matches holders to boxd's commands and builds the JSON.
 * Calls that come while a listing runs share the next one (one scan at a
 * time, none older than its call). */
#ifndef BOXD_PORTS_H
#define BOXD_PORTS_H

#include <cjson/cJSON.h>

struct event_base;

/* A command as shown: masked, then cut to at most this many bytes (on a
 * character's edge) with " ..." after it. */
#define PORTS_COMMAND_MAX 200

/* `answer` (taken over) is the whole answer; NULL with `error`, a
 * sentence, when the kernel would not list the sockets. */
typedef void (*ports_done_fn)(void *arg, cJSON *answer, const char *error);
/* Lists the ports; `done` runs once on the loop: later (not at all if boxd
 * shuts down first), or before this returns when the kernel refuses to
 * list the sockets. */
void ports_list(struct event_base *base, ports_done_fn done, void *arg);

#endif
