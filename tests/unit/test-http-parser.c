/* The request parser (http/http-parser.c): heads accepted and refused with
 * the status to answer, and the chunked decoder over every split. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "http-parser.h"

static int status_of(const char *head)
{
	struct http_head parsed;
	const char *why = NULL;
	int status = http_parse_head(head, strlen(head), &parsed, &why);
	if (status == 0)
		http_head_free(&parsed);
	else
		CHECK(why && *why);
	return status;
}

static void check_heads(void)
{
	struct http_head head;
	const char *why;
	const char *text = "POST /v1/sync/upload?dest=a HTTP/1.1\r\nHost: x\r\n"
			   "transfer-encoding:  Chunked \r\nExpect: 100-continue\r\nConnection: a, "
			   "close\r\n\r\n";
	CHECK(http_parse_head(text, strlen(text), &head, &why) == 0);
	CHECK(strcmp(head.method, "POST") == 0 &&
	      strcmp(head.target, "/v1/sync/upload?dest=a") == 0);
	CHECK(head.body == HTTP_BODY_CHUNKED && head.expect_continue && !head.keep_alive);
	CHECK(head.minor_version == 1 && head.header_count == 4);
	CHECK(strcmp(http_head_get(&head, "HOST"), "x") == 0);
	CHECK(strcmp(http_head_get(&head, "Transfer-Encoding"), "Chunked") == 0);
	CHECK(http_head_get(&head, "Missing") == NULL);
	http_head_free(&head);

	text = "GET / HTTP/1.0\r\nContent-Length: 0\r\n\r\n";
	CHECK(http_parse_head(text, strlen(text), &head, &why) == 0);
	CHECK(head.body == HTTP_BODY_NONE && !head.keep_alive);
	http_head_free(&head);
	text = "PUT /x HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 12\r\nContent-Length: "
	       "12\r\n\r\n";
	CHECK(http_parse_head(text, strlen(text), &head, &why) == 0);
	CHECK(head.body == HTTP_BODY_LENGTH && head.content_length == 12 && head.keep_alive);
	http_head_free(&head);

	CHECK(status_of("GET /v1/health HTTP/1.1\r\n\r\n") == 0);
	CHECK(status_of("GET /v1/health HTTP/1.1\r\nA:\r\n\r\n") == 0); /* an empty value */
	CHECK(status_of("GET /v1/health\r\n\r\n") == 400);
	CHECK(status_of("GET * HTTP/1.1\r\n\r\n") == 400);
	CHECK(status_of("GET /a b HTTP/1.1\r\n\r\n") == 400);
	CHECK(status_of("G@T / HTTP/1.1\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/2.0\r\n\r\n") == 505);
	CHECK(status_of("GET / HTTP/1.1\r\nName : v\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\n: v\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nA: b\rc\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nA: b\x7f\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nContent-Length: +5\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nContent-Length: 1,1\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nContent-Length: 1234567890123456789\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: "
			"chunked\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
			"chunked\r\n\r\n") == 400);
	CHECK(status_of("GET / HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n") == 501);
	CHECK(status_of("GET / HTTP/1.1\r\n\r") == 400);

	/* Past 100 header lines: 431. */
	char many[4096] = "GET / HTTP/1.1\r\n";
	for (int i = 0; i < 101; i++)
		strcat(many, "A: b\r\n");
	strcat(many, "\r\n");
	CHECK(status_of(many) == 431);
	/* A NUL inside is refused, not cut short at. */
	const char with_nul[] = "GET / HTTP/1.1\r\nA: b\0c\r\n\r\n";
	CHECK(http_parse_head(with_nul, sizeof with_nul - 1, &head, &why) == 400);

	CHECK(http_head_length("GET / HTTP/1.1\r\n\r\nrest", 22) == 18);
	CHECK(http_head_length("GET / HTTP/1.1\r\n\r", 17) == 0);
}

/* Decodes `body` fed in pieces of `step` bytes; the data, or NULL on error. */
static char *decode(const char *body, size_t step, bool *done)
{
	struct http_chunked chunked;
	http_chunked_init(&chunked);
	char *out = calloc(1, strlen(body) + 1);
	size_t out_length = 0, at = 0, length = strlen(body);
	*done = false;
	while (at < length && !*done) {
		size_t piece = length - at < step ? length - at : step;
		size_t used = 0, offset = 0;
		while (offset < piece && !*done) {
			enum http_chunked_result result = http_chunked_feed(
				&chunked, body + at + offset, piece - offset, &used);
			if (result == HTTP_CHUNKED_ERROR) {
				free(out);
				return NULL;
			}
			if (result == HTTP_CHUNKED_DATA) {
				size_t take = used > 1 ? used - 1
						       : used; /* a sink taking less than offered */
				memcpy(out + out_length, body + at + offset, take);
				out_length += take;
				http_chunked_take(&chunked, take);
				used = take;
			}
			*done = result == HTTP_CHUNKED_DONE;
			offset += used;
		}
		at += offset;
	}
	return out;
}

static void check_chunked(void)
{
	const char *body =
		"4\r\nWiki\r\n5;name=v\r\npedia\r\nE \r\n in\r\n\r\nchunks.\r\n0\r\nT: x\r\n\r\n";
	for (size_t step = 1; step <= strlen(body); step++) {
		bool done;
		char *out = decode(body, step, &done);
		CHECKF(out && done && strcmp(out, "Wikipedia in\r\n\r\nchunks.") == 0,
		       "step %zu: %s", step, out ? out : "(error)");
		free(out);
	}
	const char *bad[] = {"x\r\n",
			     "\r\n",
			     "4\r\nWikiX",
			     "4\nWiki",
			     "1234567890abcdef\r\n",
			     "1\r\na\r\n0\r\n:x\r\n\r\n",
			     "0\r\n\n",
			     NULL};
	for (int i = 0; bad[i]; i++) {
		bool done;
		char *out = decode(bad[i], 1, &done);
		CHECKF(out == NULL, "%s was taken", bad[i]);
		free(out);
	}
}

int main(void)
{
	check_heads();
	check_chunked();
	return check_done("http-parser");
}
