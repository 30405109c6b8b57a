/* wire.h: what the probes and the two database clients share: a TCP
 * connection to 127.0.0.1:PORT whose every read and write gives up after
 * a timeout, and whole reads and writes on it. */
#ifndef PSBX_WIRE_H
#define PSBX_WIRE_H

#include <stdbool.h>
#include <stddef.h>

/* Each step waits this long at most: a server that takes longer to say its
 * next word is not ready for a test either. */
#define WIRE_TIMEOUT_MS 2000

/* Connects to "ADDRESS:PORT" (IPv4); the fd, or -1 with `detail` set. */
int wire_connect(const char *host_port, char *detail, size_t size);

/* All of `length` bytes; false with `detail` set. */
bool wire_write(int fd, const void *data, size_t length, char *detail, size_t size);

/* Exactly `length` bytes; false with `detail` set (the server hung up, or
 * said nothing in time). */
bool wire_read(int fd, void *data, size_t length, char *detail, size_t size);

#endif
