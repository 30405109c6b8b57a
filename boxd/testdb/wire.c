/* wire.c: a TCP connection with timeouts (wire.h). */
#include "wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int wire_connect(const char *host_port, int timeout_ms, char *detail, size_t size)
{
	const char *colon = strrchr(host_port, ':');
	char address[64];
	if (!colon || (size_t)(colon - host_port) >= sizeof address) {
		snprintf(detail, size, "not an address: %s", host_port);
		return -1;
	}
	memcpy(address, host_port, (size_t)(colon - host_port));
	address[colon - host_port] = '\0';
	struct sockaddr_in peer = {.sin_family = AF_INET,
				   .sin_port = htons((uint16_t)atoi(colon + 1))};
	if (inet_pton(AF_INET, address, &peer.sin_addr) != 1) {
		snprintf(detail, size, "not an IPv4 address: %s", address);
		return -1;
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(detail, size, "socket: %s", strerror(errno));
		return -1;
	}
	struct timeval timeout = {.tv_sec = timeout_ms / 1000,
				  .tv_usec = (timeout_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
	if (connect(fd, (struct sockaddr *)&peer, sizeof peer) < 0) {
		snprintf(detail, size, "connect %s: %s", host_port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

bool wire_write(int fd, const void *data, size_t length, char *detail, size_t size)
{
	const char *at = data;
	while (length > 0) {
		ssize_t put = write(fd, at, length);
		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0) {
			snprintf(detail, size, "cannot send: %s", strerror(errno));
			return false;
		}
		at += put;
		length -= (size_t)put;
	}
	return true;
}

bool wire_read(int fd, void *data, size_t length, char *detail, size_t size)
{
	char *at = data;
	while (length > 0) {
		ssize_t got = read(fd, at, length);
		if (got < 0 && errno == EINTR)
			continue;
		if (got == 0) {
			snprintf(detail, size, "the connection was closed before the server spoke");
			return false;
		}
		if (got < 0) {
			snprintf(detail, size, "no answer: %s", strerror(errno));
			return false;
		}
		at += got;
		length -= (size_t)got;
	}
	return true;
}
