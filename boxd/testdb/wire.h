/* wire.h: what the probes and the two database clients share: a TCP
 * connection to 127.0.0.1:PORT whose every read and write gives up after
 * a timeout, and whole reads and writes on it. */
#ifndef PSBX_WIRE_H
#define PSBX_WIRE_H

#include <stdbool.h>
#include <stddef.h>

/* A probe's every step waits this long at most: a server that takes
 * longer to say its first word is not ready for a test either. */
#define WIRE_PROBE_TIMEOUT_MS 2000
/* A log-in and a statement may take longer: CREATE DATABASE copies the
 * template, and gotest's packages ask side by side on a slow box. */
#define WIRE_STATEMENT_TIMEOUT_MS 60000

/* Connects to "ADDRESS:PORT" (IPv4), every later read and write on it
 * given up after `timeout_ms`; the fd, or -1 with `detail` set. */
int wire_connect(const char *host_port, int timeout_ms, char *detail, size_t size);

/* All of `length` bytes; false with `detail` set. */
bool wire_write(int fd, const void *data, size_t length, char *detail, size_t size);

/* Exactly `length` bytes; false with `detail` set (the server hung up, or
 * said nothing in time). */
bool wire_read(int fd, void *data, size_t length, char *detail, size_t size);

#endif
