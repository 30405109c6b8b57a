/* http-parser.h: boxd's HTTP/1.1 request parser. Pure: bytes in, a parsed
 * head or a chunked body's framing out, no sockets, no libevent, so it is
 * fuzzed alone (tests/fuzz/fuzz-request.c drives whole connections through
 * it). Strict on purpose: what it does not understand is refused with the
 * status to answer, never guessed at.
 *
 * A request is a head (request line and header lines, each ending CRLF,
 * then an empty line) and a body framed by Content-Length or by chunked
 * Transfer-Encoding. The connection (connection.c) finds the head's end,
 * hands the head to http_parse_head(), then reads the body
 * (connection-body.c) itself or through the chunked decoder. */
#ifndef BOXD_HTTP_PARSER_H
#define BOXD_HTTP_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest head (request line, headers, the empty line): past it, 431. */
#define HTTP_HEAD_LIMIT (64u << 10)
#define HTTP_MAX_HEADERS 100

struct http_header {
	const char *name;
	const char *value; /* without surrounding spaces */
};

enum http_body_kind {
	HTTP_BODY_NONE,   /* no Content-Length, no Transfer-Encoding (or length 0) */
	HTTP_BODY_LENGTH, /* content_length bytes */
	HTTP_BODY_CHUNKED,
};

struct http_head {
	char *text; /* the head's own copy; every pointer below points into it */
	const char *method;
	const char *target; /* as sent: origin-form, "/path?query" */
	int minor_version;  /* HTTP/1.x */
	struct http_header headers[HTTP_MAX_HEADERS];
	int header_count;
	enum http_body_kind body;
	uint64_t content_length;
	bool keep_alive;      /* Connection and version: may another request follow? */
	bool expect_continue; /* Expect: 100-continue */
};

/* Where the head at the start of `data` ends: the length up to and with its
 * empty line, or 0 while that has not arrived. */
size_t http_head_length(const char *data, size_t length);

/* Parses a complete head (`length` bytes, ending CRLF CRLF, at most
 * HTTP_HEAD_LIMIT). 0 on success (free with http_head_free), else the status
 * to answer (400, 431, 501, 505) with a sentence in *why; `head` then holds
 * nothing to free. */
int http_parse_head(const char *data, size_t length, struct http_head *head, const char **why);
void http_head_free(struct http_head *head);
/* The first header `name` (case-insensitive), or NULL. */
const char *http_head_get(const struct http_head *head, const char *name);

/* The chunked body decoder, fed any split of the body's bytes. */
struct http_chunked {
	int state;
	uint64_t remaining; /* of the current chunk's data */
	unsigned digits;
	size_t extension, trailers; /* bytes of chunk extensions and trailers seen */
};

enum http_chunked_result {
	HTTP_CHUNKED_MORE,  /* *used bytes of framing were taken: drop them, feed on */
	HTTP_CHUNKED_DATA,  /* the first *used bytes are body data, not yet taken */
	HTTP_CHUNKED_DONE,  /* the body ended; *used bytes were its last framing */
	HTTP_CHUNKED_ERROR, /* malformed: answer 400 and close */
};

void http_chunked_init(struct http_chunked *chunked);
/* Reads from `data` (length > 0). DATA: the first *used bytes are data (at
 * most the chunk's rest), for the caller to take all or part of with
 * http_chunked_take(); otherwise *used bytes of framing were taken. */
enum http_chunked_result http_chunked_feed(struct http_chunked *chunked, const char *data,
					   size_t length, size_t *used);
/* How many bytes of the current chunk's data are still to come (0 when the
 * decoder is not inside a chunk's data). */
uint64_t http_chunked_data_left(const struct http_chunked *chunked);
/* `length` bytes of data (at most what DATA offered) were consumed. */
void http_chunked_take(struct http_chunked *chunked, size_t length);

#endif
