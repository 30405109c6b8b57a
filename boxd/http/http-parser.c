#include "http-parser.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "text.h"

#define MAX_CHUNK_DIGITS 15 /* a chunk of at most 2^60 bytes */
#define MAX_EXTENSION 4096  /* chunk extensions, ignored, per chunk */
#define MAX_TRAILERS (16u << 10)

size_t http_head_length(const char *data, size_t length)
{
	const char *end = memmem(data, length, "\r\n\r\n", 4);
	return end ? (size_t)(end - data) + 4 : 0;
}

/* RFC 9110 token characters. */
static bool is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A field value's bytes: visible ASCII, space, tab, and obs-text. */
static bool is_value_char(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* Does the comma-separated list `value` hold `token` (case-insensitive)? */
static bool list_has(const char *value, const char *token)
{
	size_t length = strlen(token);
	const char *at = value;
	while (*at) {
		while (*at == ',' || is_space(*at))
			at++;
		const char *start = at;
		while (*at && *at != ',')
			at++;
		const char *end = at;
		while (end > start && is_space(end[-1]))
			end--;
		if ((size_t)(end - start) == length && strncasecmp(start, token, length) == 0)
			return true;
	}
	return false;
}

static int fail(const char **why, const char *message, int status)
{
	*why = message;
	return status;
}

/* "METHOD SP TARGET SP HTTP/1.x" in `line` (NUL-terminated, no CRLF). */
static int parse_request_line(char *line, struct http_head *head, const char **why)
{
	char *at = line;
	while (is_tchar((unsigned char)*at))
		at++;
	if (at == line || at - line > 16 || *at != ' ')
		return fail(why, "the request line must be METHOD SP TARGET SP HTTP/1.1", 400);
	*at++ = '\0';
	head->method = line;
	char *target = at;
	while ((unsigned char)*at > 0x20 && (unsigned char)*at < 0x7f)
		at++;
	if (at == target || *at != ' ')
		return fail(why, "the request line must be METHOD SP TARGET SP HTTP/1.1", 400);
	*at++ = '\0';
	if (target[0] != '/')
		return fail(why, "the request target must be a path such as /v1/health", 400);
	head->target = target;
	if (strncmp(at, "HTTP/", 5) != 0 || at[5] < '0' || at[5] > '9' || at[6] != '.' ||
	    at[7] < '0' || at[7] > '9' || at[8] != '\0')
		return fail(why, "the request line must end with the version HTTP/1.1", 400);
	if (at[5] != '1')
		return fail(why, "boxd speaks HTTP/1.1 (and 1.0) only", 505);
	head->minor_version = at[7] - '0';
	return 0;
}

/* Content-Length: one decimal number (repeats must agree). */
static int take_length(const char *value, struct http_head *head, bool *seen, const char **why)
{
	uint64_t number = 0;
	const char *at = value;
	if (!*at)
		return fail(why, "Content-Length must be a whole number of bytes", 400);
	for (; *at; at++) {
		if (*at < '0' || *at > '9' || at - value >= 18)
			return fail(why, "Content-Length must be a whole number of bytes", 400);
		number = number * 10 + (uint64_t)(*at - '0');
	}
	if (*seen && number != head->content_length)
		return fail(why, "the request has two different Content-Length headers", 400);
	*seen = true;
	head->content_length = number;
	return 0;
}

/* The rules across headers: framing, Connection, Expect. */
static int apply_headers(struct http_head *head, const char **why)
{
	bool length_seen = false, chunked = false;
	const char *encoding = NULL;
	head->keep_alive = head->minor_version >= 1;
	for (int i = 0; i < head->header_count; i++) {
		const char *name = head->headers[i].name, *value = head->headers[i].value;
		if (strcasecmp(name, "Content-Length") == 0) {
			int status = take_length(value, head, &length_seen, why);
			if (status)
				return status;
		} else if (strcasecmp(name, "Transfer-Encoding") == 0) {
			if (encoding)
				return fail(
					why,
					"the request has more than one Transfer-Encoding header",
					400);
			encoding = value;
		} else if (strcasecmp(name, "Connection") == 0) {
			if (list_has(value, "close"))
				head->keep_alive = false;
			else if (list_has(value, "keep-alive") && head->minor_version == 0)
				head->keep_alive = true;
		} else if (strcasecmp(name, "Expect") == 0) {
			head->expect_continue =
				strcasecmp(value, "100-continue") == 0 && head->minor_version >= 1;
		}
	}
	if (encoding) {
		if (length_seen)
			return fail(
				why,
				"a request cannot have both Content-Length and Transfer-Encoding",
				400);
		if (strcasecmp(encoding, "chunked") != 0)
			return fail(why, "the only Transfer-Encoding boxd takes is chunked", 501);
		if (head->minor_version == 0)
			return fail(why, "HTTP/1.0 has no Transfer-Encoding", 400);
		chunked = true;
	}
	head->body = chunked                               ? HTTP_BODY_CHUNKED
		     : length_seen && head->content_length ? HTTP_BODY_LENGTH
							   : HTTP_BODY_NONE;
	return 0;
}

/* "name: value" in `line` (NUL-terminated, no CRLF). */
static int parse_header_line(char *line, struct http_head *head, const char **why)
{
	if (is_space(*line))
		return fail(
			why,
			"a header line cannot start with a space (folded headers are not taken)",
			400);
	char *at = line;
	while (is_tchar((unsigned char)*at))
		at++;
	if (at == line || *at != ':')
		return fail(why, "a header line must be NAME: VALUE, the name without spaces", 400);
	*at++ = '\0';
	while (is_space(*at))
		at++;
	char *value = at;
	for (; *at; at++)
		if (!is_value_char((unsigned char)*at))
			return fail(why, "a header value holds a control character", 400);
	while (at > value && is_space(at[-1]))
		*--at = '\0';
	if (head->header_count == HTTP_MAX_HEADERS)
		return fail(why, "the request has more than 100 header lines", 431);
	head->headers[head->header_count++] = (struct http_header){line, value};
	return 0;
}

int http_parse_head(const char *data, size_t length, struct http_head *head, const char **why)
{
	memset(head, 0, sizeof *head);
	if (length > HTTP_HEAD_LIMIT)
		return fail(why, "the request's head (request line and headers) is over 64 KiB",
			    431);
	if (length < 4 || memcmp(data + length - 4, "\r\n\r\n", 4) != 0)
		return fail(why, "the request's head is cut short", 400);
	if (memchr(data, '\0', length))
		return fail(why, "the request's head holds a NUL byte", 400);
	head->text = malloc(length + 1);
	if (!head->text)
		return fail(why, "out of memory", 503);
	memcpy(head->text, data, length);
	head->text[length - 2] = '\0'; /* the empty line's CRLF */
	char *line = head->text;
	int status = 0;
	for (int index = 0; !status && *line; index++) {
		char *end = strstr(line, "\r\n");
		*end = '\0';
		if (memchr(line, '\r', (size_t)(end - line)) ||
		    memchr(line, '\n', (size_t)(end - line)))
			status = fail(why, "a line of the request's head ends with a bare CR or LF",
				      400);
		else
			status = index == 0 ? parse_request_line(line, head, why)
					    : parse_header_line(line, head, why);
		line = end + 2;
	}
	if (!status && !head->method)
		status = fail(why, "the request has no request line", 400);
	if (!status)
		status = apply_headers(head, why);
	if (status)
		http_head_free(head);
	return status;
}

void http_head_free(struct http_head *head)
{
	free(head->text);
	memset(head, 0, sizeof *head);
}

const char *http_head_get(const struct http_head *head, const char *name)
{
	for (int i = 0; i < head->header_count; i++)
		if (strcasecmp(head->headers[i].name, name) == 0)
			return head->headers[i].value;
	return NULL;
}

/* ---- chunked bodies ---- */

enum {
	CHUNK_SIZE,      /* hex digits */
	CHUNK_EXTENSION, /* ";name=value" after the size, skipped */
	CHUNK_SIZE_LF,
	CHUNK_DATA,
	CHUNK_DATA_CR,
	CHUNK_DATA_LF,
	CHUNK_TRAILER, /* at the start of a trailer line, or of the final empty line */
	CHUNK_TRAILER_LINE,
	CHUNK_TRAILER_LF,
	CHUNK_FINAL_LF,
	CHUNK_DONE,
};

void http_chunked_init(struct http_chunked *chunked)
{
	memset(chunked, 0, sizeof *chunked);
	chunked->state = CHUNK_SIZE;
}

/* One framing byte. False: malformed. */
static bool frame_byte(struct http_chunked *c, char byte)
{
	switch (c->state) {
	case CHUNK_SIZE: {
		int digit = text_hex_value(byte);
		if (digit >= 0) {
			if (++c->digits > MAX_CHUNK_DIGITS)
				return false;
			c->remaining = c->remaining * 16 + (uint64_t)digit;
			return true;
		}
		if (c->digits == 0)
			return false;
		if (byte == '\r') {
			c->state = CHUNK_SIZE_LF;
			return true;
		}
		if (byte == ';' || is_space(byte)) {
			c->state = CHUNK_EXTENSION;
			c->extension = 0;
			return true;
		}
		return false;
	}
	case CHUNK_EXTENSION:
		if (byte == '\r') {
			c->state = CHUNK_SIZE_LF;
			return true;
		}
		return ++c->extension <= MAX_EXTENSION && is_value_char((unsigned char)byte);
	case CHUNK_SIZE_LF:
		if (byte != '\n')
			return false;
		c->digits = 0;
		c->state = c->remaining ? CHUNK_DATA : CHUNK_TRAILER;
		return true;
	case CHUNK_DATA_CR: c->state = CHUNK_DATA_LF; return byte == '\r';
	case CHUNK_DATA_LF: c->state = CHUNK_SIZE; return byte == '\n';
	case CHUNK_TRAILER:
		if (++c->trailers > MAX_TRAILERS)
			return false;
		if (byte == '\r') {
			c->state = CHUNK_FINAL_LF;
			return true;
		}
		c->state = CHUNK_TRAILER_LINE;
		return is_tchar((unsigned char)byte);
	case CHUNK_TRAILER_LINE:
		if (++c->trailers > MAX_TRAILERS)
			return false;
		if (byte == '\r')
			c->state = CHUNK_TRAILER_LF;
		return byte == '\r' || is_value_char((unsigned char)byte);
	case CHUNK_TRAILER_LF: c->state = CHUNK_TRAILER; return byte == '\n';
	case CHUNK_FINAL_LF: c->state = CHUNK_DONE; return byte == '\n';
	}
	return false;
}

enum http_chunked_result http_chunked_feed(struct http_chunked *c, const char *data, size_t length,
					   size_t *used)
{
	*used = 0;
	if (c->state == CHUNK_DATA) {
		*used = c->remaining < length ? (size_t)c->remaining : length;
		return HTTP_CHUNKED_DATA;
	}
	while (*used < length && c->state != CHUNK_DATA && c->state != CHUNK_DONE) {
		if (!frame_byte(c, data[*used]))
			return HTTP_CHUNKED_ERROR;
		(*used)++;
	}
	return c->state == CHUNK_DONE ? HTTP_CHUNKED_DONE : HTTP_CHUNKED_MORE;
}

void http_chunked_take(struct http_chunked *c, size_t length)
{
	if (c->state != CHUNK_DATA || length > c->remaining)
		return;
	c->remaining -= length;
	if (!c->remaining)
		c->state = CHUNK_DATA_CR;
}

uint64_t http_chunked_data_left(const struct http_chunked *c)
{
	return c->state == CHUNK_DATA ? c->remaining : 0;
}
