/* failure.h: what went wrong, in one vocabulary for boxd's services, its
 * workers and their protocols.
 *
 * Each failure is one of the contract's error codes (API.md,
 * "Conventions"). Nothing below the router knows an HTTP status: a worker
 * answers a code, its client turns it into a failure, a handler answers
 * the failure, and http/http-errors.c maps each to its status, in one
 * table. */
#ifndef BOXD_FAILURE_H
#define BOXD_FAILURE_H

#include <stdbool.h>
#include <stddef.h>

enum failure {
	FAILURE_BAD_REQUEST,
	FAILURE_CWD_NOT_FOUND,
	FAILURE_FORBIDDEN,
	FAILURE_NOT_FOUND,
	FAILURE_METHOD_NOT_ALLOWED,
	FAILURE_TIMEOUT,
	FAILURE_CONFLICT,
	FAILURE_FROZEN,
	FAILURE_PAYLOAD_TOO_LARGE,
	FAILURE_RANGE_NOT_SATISFIABLE,
	FAILURE_LOCKED,
	FAILURE_HEADER_TOO_LARGE,
	FAILURE_INTERNAL,
	FAILURE_NOT_IMPLEMENTED,
	FAILURE_HTTP_VERSION, /* an HTTP version boxd does not speak: bad_request, 505 */
	FAILURE_UNAVAILABLE,
	FAILURE_DISPLAY_UNAVAILABLE,
	FAILURE_DISK_FULL,
	FAILURE_COUNT
};

/* The contract's code: "bad_request", "disk_full", ... */
const char *failure_code(enum failure failure);
/* The failure a code names (a worker's or a shim's answer); an unknown or
 * missing code is FAILURE_INTERNAL. */
enum failure failure_from_code(const char *code);

/* True for the errnos of a full disk (or a full quota): ENOSPC, EDQUOT. */
bool failure_disk_full(int error);

/* Writing what a caller sent failed with `error` (an errno): disk_full
 * when the disk is full (the caller can free space and retry), else
 * internal. `message` gets `what` (naming the path), ": ", the errno's
 * text, and for a full disk what to do. */
enum failure failure_of_write(int error, const char *what, char *message, size_t message_size);

#endif
