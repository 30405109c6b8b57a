/* probe.c: the first step of PostgreSQL's and MySQL's protocols (probe.h). */
#include "probe.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "wire.h"

/* Reads up to `size` bytes, at least one; the count, or 0 at the end (the
 * proxy hung up: nothing listens behind it yet), or -1. */
static ssize_t probe_read(int fd, uint8_t *buffer, size_t size, char *detail, size_t detail_size)
{
	ssize_t got;
	do
		got = read(fd, buffer, size);
	while (got < 0 && errno == EINTR);
	if (got == 0)
		snprintf(detail, detail_size, "the connection was closed before the server spoke");
	else if (got < 0)
		snprintf(detail, detail_size, "no answer: %s", strerror(errno));
	return got;
}

static void put_u32(uint8_t *at, uint32_t value)
{
	at[0] = (uint8_t)(value >> 24);
	at[1] = (uint8_t)(value >> 16);
	at[2] = (uint8_t)(value >> 8);
	at[3] = (uint8_t)value;
}

/* An ErrorResponse's human message (its 'M' field), for the detail. */
static void postgres_error_text(const uint8_t *message, size_t length, char *detail, size_t size)
{
	snprintf(detail, size, "the server refused a client");
	for (size_t i = 5; i < length && message[i];) {
		const char *field = (const char *)message + i + 1;
		size_t field_length = strnlen(field, length - i - 1);
		if (message[i] == 'M') {
			snprintf(detail, size, "%.*s", (int)field_length, field);
			return;
		}
		i += field_length + 2;
	}
}

bool probe_postgres(const char *host_port, const char *user, const char *database, char *detail,
		    size_t size)
{
	int fd = wire_connect(host_port, detail, size);
	if (fd < 0)
		return false;
	/* Int32 length, Int32 protocol 3.0, then name/value pairs and a NUL. */
	uint8_t message[512];
	int body = snprintf((char *)message + 8, sizeof message - 9, "user%c%s%cdatabase%c%s%c", 0,
			    user, 0, 0, database, 0);
	size_t length = 8 + (size_t)body + 1;
	message[length - 1] = 0;
	put_u32(message, (uint32_t)length);
	put_u32(message + 4, 196608);
	bool ready = false;
	if (write(fd, message, length) != (ssize_t)length) {
		snprintf(detail, size, "cannot send a startup message: %s", strerror(errno));
	} else {
		uint8_t answer[1024];
		ssize_t got = probe_read(fd, answer, sizeof answer, detail, size);
		if (got > 0 && answer[0] == 'R')
			ready = true;
		else if (got > 0 && answer[0] == 'E')
			postgres_error_text(answer, (size_t)got, detail, size);
		else if (got > 0)
			snprintf(detail, size, "not a PostgreSQL answer (first byte 0x%02x)",
				 answer[0]);
	}
	close(fd);
	return ready;
}

bool probe_mysql(const char *host_port, char *detail, size_t size)
{
	int fd = wire_connect(host_port, detail, size);
	if (fd < 0)
		return false;
	/* A packet: 3 bytes of length, a sequence byte, then the payload whose
	 * first byte is the protocol version (10) or 0xff for an error. */
	uint8_t answer[1024];
	ssize_t got = probe_read(fd, answer, sizeof answer, detail, size);
	bool ready = false;
	if (got >= 5 && answer[4] == 10)
		ready = true;
	else if (got >= 7 && answer[4] == 0xff)
		snprintf(detail, size, "%.*s", (int)(got - 7), (const char *)answer + 7);
	else if (got > 0)
		snprintf(detail, size, "not a MySQL handshake (%zd bytes)", got);
	close(fd);
	return ready;
}
