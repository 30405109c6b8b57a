/* hosts-block.h: a block of lines that boxd owns in a hosts file
 * (/etc/hosts), between a begin and an end line, replaced whole while every
 * other line stays as it is. Init writes one (the names the control plane
 * wired), the services table another (each service's name). */
#ifndef BOXD_HOSTS_BLOCK_H
#define BOXD_HOSTS_BLOCK_H

#include <stdbool.h>
#include <stddef.h>

/* The largest hosts file read; what lies beyond is not kept. */
#define HOSTS_BLOCK_MAX_FILE (1u << 20)

/* Replaces the block of `path` that starts with a line beginning with
 * `begin` and ends with the line `end` by `lines` ("address\tname\n"...;
 * "" removes the block), atomically (a reader sees the old file or the new
 * one). False with errno set and a sentence in `error` when it cannot. */
bool hosts_block_write(const char *path, const char *begin, const char *end, const char *lines,
		       char *error, size_t error_size);

#endif
