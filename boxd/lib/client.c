#include "text.h"
#include "client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "xalloc.h"

#define READ_BUFFER 65536
#define MAX_HEADER_BYTES (64 * 1024)

struct client {
	int fd;
	char *buffer; /* bytes read but not consumed: buffer[start..end) */
	size_t start, end;
};

/* Where the body goes: a growing buffer, or a callback. */
struct body_sink {
	bool (*on_data)(void *arg, const char *data, size_t length);
	void *arg;
	char *data;
	size_t length, capacity;
	bool stopped;
};

struct client *client_connect(const char *socket_path, char *error, size_t error_size)
{
	struct sockaddr_un address = {.sun_family = AF_UNIX};
	if (strlen(socket_path) >= sizeof address.sun_path) {
		text_fail(error, error_size, "socket path %s is too long", socket_path);
		return NULL;
	}
	strcpy(address.sun_path, socket_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
		int saved = errno;
		text_fail(error, error_size, "cannot connect to boxd at %s: %s%s", socket_path,
			  strerror(saved),
			  saved == ENOENT || saved == ECONNREFUSED
				  ? " (is boxd running? see --socket or BOXD_SOCKET)"
				  : "");
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	struct client *client = xcalloc(1, sizeof *client);
	client->fd = fd;
	client->buffer = xmalloc(READ_BUFFER);
	return client;
}

void client_close(struct client *client)
{
	if (!client)
		return;
	close(client->fd);
	free(client->buffer);
	free(client);
}

static bool write_all(int fd, const void *data, size_t length)
{
	const char *p = data;
	while (length) {
		ssize_t n = send(fd, p, length, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		length -= (size_t)n;
	}
	return true;
}

/* Makes at least one more byte available; false at EOF or error. */
static bool fill(struct client *client)
{
	if (client->start == client->end)
		client->start = client->end = 0;
	if (client->end == READ_BUFFER) {
		memmove(client->buffer, client->buffer + client->start,
			client->end - client->start);
		client->end -= client->start;
		client->start = 0;
		if (client->end == READ_BUFFER)
			return false;
	}
	for (;;) {
		ssize_t n =
			read(client->fd, client->buffer + client->end, READ_BUFFER - client->end);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		client->end += (size_t)n;
		return true;
	}
}

/* Reads one CRLF- (or LF-) terminated line into `line`, without the ending. */
static bool read_line(struct client *client, char *line, size_t size)
{
	for (;;) {
		char *start = client->buffer + client->start;
		char *newline = memchr(start, '\n', client->end - client->start);
		if (newline) {
			size_t length = (size_t)(newline - start);
			if (length && start[length - 1] == '\r')
				length--;
			if (length >= size)
				return false;
			memcpy(line, start, length);
			line[length] = '\0';
			client->start += (size_t)(newline - start) + 1;
			return true;
		}
		if (!fill(client))
			return false;
	}
}

static bool sink_add(struct body_sink *sink, const char *data, size_t length)
{
	if (sink->stopped || length == 0)
		return true;
	if (sink->on_data) {
		if (!sink->on_data(sink->arg, data, length))
			sink->stopped = true;
		return true;
	}
	if (!sink->data || sink->length + length + 1 > sink->capacity) {
		sink->capacity = (sink->length + length + 1) * 2;
		sink->data = xrealloc(sink->data, sink->capacity);
	}
	if (length)
		memcpy(sink->data + sink->length, data, length);
	sink->length += length;
	return true;
}

/* Passes `length` body bytes (or all until EOF when length is -1) to `sink`. */
static bool read_body_bytes(struct client *client, long long length, struct body_sink *sink)
{
	while (length != 0) {
		if (client->start == client->end && !fill(client))
			return length < 0;
		size_t available = client->end - client->start;
		size_t take = length < 0 || (unsigned long long)length > available ? available
										   : (size_t)length;
		sink_add(sink, client->buffer + client->start, take);
		client->start += take;
		if (length > 0)
			length -= (long long)take;
		if (sink->stopped)
			return true;
	}
	return true;
}

static bool read_chunked(struct client *client, struct body_sink *sink)
{
	char line[256];
	for (;;) {
		if (!read_line(client, line, sizeof line))
			return false;
		char *end;
		long long size = strtoll(line, &end, 16);
		if (end == line || size < 0)
			return false;
		if (size == 0) {
			/* Trailers, then the empty line. */
			while (read_line(client, line, sizeof line) && line[0])
				;
			return true;
		}
		if (!read_body_bytes(client, size, sink) || sink->stopped)
			return sink->stopped;
		if (!read_line(client, line, sizeof line))
			return false;
	}
}

static void add_header(struct client_response *response, const char *line)
{
	const char *colon = strchr(line, ':');
	if (!colon)
		return;
	const char *value = colon + 1;
	while (*value == ' ' || *value == '\t')
		value++;
	response->headers = xrealloc(response->headers,
				     (response->header_count + 1) * sizeof *response->headers);
	response->headers[response->header_count].name = xstrndup(line, (size_t)(colon - line));
	response->headers[response->header_count].value = xstrdup(value);
	response->header_count++;
}

static bool read_head(struct client *client, struct client_response *response, char *error,
		      size_t error_size)
{
	char line[8192];
	if (!read_line(client, line, sizeof line))
		return text_fail(error, error_size, "boxd closed the connection without an answer");
	if (sscanf(line, "HTTP/1.%*d %d", &response->status) != 1)
		return text_fail(error, error_size,
				 "boxd answered something that is not HTTP: %.60s", line);
	size_t total = 0;
	for (;;) {
		if (!read_line(client, line, sizeof line))
			return text_fail(error, error_size, "the answer's headers were cut off");
		if (!line[0])
			return true;
		total += strlen(line);
		if (total > MAX_HEADER_BYTES)
			return text_fail(error, error_size, "the answer's headers are too large");
		add_header(response, line);
	}
}

static bool read_body(struct client *client, const char *method, struct client_response *response,
		      struct body_sink *sink, char *error, size_t error_size);

static bool read_response(struct client *client, const char *method,
			  struct client_response *response, struct body_sink *sink, char *error,
			  size_t error_size)
{
	memset(response, 0, sizeof *response);
	if (!read_head(client, response, error, error_size))
		return false;
	/* 100 Continue and other interim answers come before the real one. */
	while (response->status >= 100 && response->status < 200) {
		client_response_free(response);
		if (!read_head(client, response, error, error_size))
			return false;
	}
	return read_body(client, method, response, sink, error, error_size);
}

/* The body after a head already read, as its headers frame it. */
static bool read_body(struct client *client, const char *method, struct client_response *response,
		      struct body_sink *sink, char *error, size_t error_size)
{
	const char *encoding = client_response_header(response, "Transfer-Encoding");
	const char *length = client_response_header(response, "Content-Length");
	bool ok;
	if (strcmp(method, "HEAD") == 0 || response->status == 204 || response->status == 304)
		ok = true;
	else if (encoding && strcasestr(encoding, "chunked"))
		ok = read_chunked(client, sink);
	else if (length)
		ok = read_body_bytes(client, strtoll(length, NULL, 10), sink);
	else
		ok = read_body_bytes(client, -1, sink);
	if (!ok)
		return text_fail(error, error_size, "the answer's body was cut off");
	if (!sink->on_data) {
		response->body = sink->data ? sink->data : xstrdup("");
		response->body[sink->length] = '\0';
		response->body_length = sink->length;
	}
	return true;
}

static bool send_head(struct client *client, const char *method, const char *path,
		      const char *content_type, long long body_length, const char *extra_headers)
{
	char *head;
	char length_header[64] = "";
	if (body_length >= 0)
		snprintf(length_header, sizeof length_header, "Content-Length: %lld\r\n",
			 body_length);
	else
		snprintf(length_header, sizeof length_header, "Transfer-Encoding: chunked\r\n");
	head = xasprintf("%s %s HTTP/1.1\r\nHost: boxd\r\n%s%s%s%s%s\r\n", method, path,
			 content_type ? "Content-Type: " : "", content_type ? content_type : "",
			 content_type ? "\r\n" : "", length_header,
			 extra_headers ? extra_headers : "");
	bool ok = write_all(client->fd, head, strlen(head));
	free(head);
	return ok;
}

static bool exchange(struct client *client, const char *method, const char *path,
		     const char *content_type, const void *body, size_t body_length,
		     const char *extra_headers, struct body_sink *sink,
		     struct client_response *response, char *error, size_t error_size)
{
	if (!send_head(client, method, path, content_type, (long long)body_length, extra_headers) ||
	    (body_length && !write_all(client->fd, body, body_length)))
		return text_fail(error, error_size, "cannot send the request to boxd: %s",
				 strerror(errno));
	return read_response(client, method, response, sink, error, error_size);
}

bool client_request(struct client *client, const char *method, const char *path,
		    const char *content_type, const void *body, size_t body_length,
		    const char *extra_headers, struct client_response *response, char *error,
		    size_t error_size)
{
	struct body_sink sink = {0};
	bool ok = exchange(client, method, path, content_type, body, body_length, extra_headers,
			   &sink, response, error, error_size);
	if (!ok)
		free(sink.data);
	return ok;
}

bool client_request_stream(struct client *client, const char *method, const char *path,
			   const char *content_type, const void *body, size_t body_length,
			   const char *extra_headers,
			   bool (*on_data)(void *arg, const char *data, size_t length), void *arg,
			   struct client_response *response, char *error, size_t error_size)
{
	struct body_sink sink = {.on_data = on_data, .arg = arg};
	return exchange(client, method, path, content_type, body, body_length, extra_headers, &sink,
			response, error, error_size);
}

bool client_upgrade(struct client *client, const char *path, const char *extra_headers,
		    struct client_response *response, char *error, size_t error_size)
{
	memset(response, 0, sizeof *response);
	/* No Content-Length: a GET's request ends with its head, and a server
	 * switching protocols must not wait for a body. */
	char *head = xasprintf("GET %s HTTP/1.1\r\nHost: boxd\r\n%s\r\n", path,
			       extra_headers ? extra_headers : "");
	bool sent = write_all(client->fd, head, strlen(head));
	free(head);
	if (!sent)
		return text_fail(error, error_size, "cannot send the request to boxd: %s",
				 strerror(errno));
	if (!read_head(client, response, error, error_size))
		return false;
	if (response->status == 101)
		return true;
	struct body_sink sink = {0};
	if (!read_body(client, "GET", response, &sink, error, error_size)) {
		free(sink.data);
		return false;
	}
	return true;
}

int client_fd(const struct client *client)
{
	return client->fd;
}

size_t client_take_buffered(struct client *client, void *out, size_t size)
{
	size_t take = client->end - client->start;
	if (take > size)
		take = size;
	memcpy(out, client->buffer + client->start, take);
	client->start += take;
	return take;
}

const char *client_response_header(const struct client_response *response, const char *name)
{
	for (size_t i = 0; i < response->header_count; i++) {
		if (strcasecmp(response->headers[i].name, name) == 0)
			return response->headers[i].value;
	}
	return NULL;
}

void client_response_free(struct client_response *response)
{
	for (size_t i = 0; i < response->header_count; i++) {
		free(response->headers[i].name);
		free(response->headers[i].value);
	}
	free(response->headers);
	free(response->body);
	memset(response, 0, sizeof *response);
}
