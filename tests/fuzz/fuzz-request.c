/* fuzz-request: whole connections through boxd's HTTP parser, as the
 * connection (http/connection.c, connection-body.c) reads them: heads
 * found and parsed (http_parse_head, the 64 KiB limit), targets routed
 * (route_percent_decode and routes_find over every route), X-Request-Id
 * checked, bodies framed by Content-Length or decoded from chunks
 * (http_chunked_feed/take), requests pipelined one after another until the
 * bytes end or one is refused.
 *
 * The same bytes are fed three ways: at once, one byte at a time, and in
 * pieces whose sizes the input's first bytes choose. The three transcripts
 * (what each request parsed to, its body, how the connection ended) must
 * be the same: a split can never change what a request means. Aborts if not.
 * Input: 8 bytes of piece sizes, then the connection's bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "http-parser.h"
#include "request-ids.h"
#include "routes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* boxd's own routes, as main.c hands them to the router. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	routes_set(api_route_tables);
	return 0;
}

/* What happened, as a running hash (FNV-1a) and a count of requests. */
struct transcript {
	uint64_t hash;
	unsigned requests;
	int end; /* 0: the bytes ended; else the status that closed it */
};

static void note(struct transcript *t, const void *bytes, size_t length)
{
	const unsigned char *at = bytes;
	for (size_t i = 0; i < length; i++)
		t->hash = (t->hash ^ at[i]) * 1099511628211ull;
}

static void note_text(struct transcript *t, const char *text)
{
	note(t, text, strlen(text) + 1);
}

enum { HEAD, BODY_LENGTH, BODY_CHUNKED, DONE };

struct conn {
	char *buffer; /* received, not yet consumed */
	size_t length;
	int state;
	uint64_t left;
	struct http_chunked chunked;
	struct transcript t;
};

static void route(struct transcript *t, const struct http_head *head)
{
	size_t raw_length = strcspn(head->target, "?#");
	char *raw = strndup(head->target, raw_length);
	size_t decoded_length;
	char *decoded = route_percent_decode(raw, raw_length, &decoded_length);
	note(t, decoded ? "d" : "-", 1);
	free(decoded);
	char *params[ROUTE_MAX_PARAMS] = {0};
	bool known;
	char allowed[64];
	const struct api_route *found =
		routes_find(head->method, raw, params, &known, allowed, sizeof allowed);
	note(t, found ? "r" : known ? "k" : "n", 1);
	for (int i = 0; i < ROUTE_MAX_PARAMS; i++) {
		if (params[i])
			note_text(t, params[i]);
		free(params[i]);
	}
	free(raw);
	const char *id = http_head_get(head, "X-Request-Id");
	if (id)
		note(t, request_ids_valid(id) ? "i" : "I", 1);
}

static void consume(struct conn *c, size_t n)
{
	memmove(c->buffer, c->buffer + n, c->length - n);
	c->length -= n;
}

static void finish(struct conn *c, int status)
{
	c->t.end = status;
	c->state = DONE;
	note(&c->t, &status, sizeof status);
}

/* One step on what is buffered. False when it needs more bytes. */
static bool step(struct conn *c)
{
	if (c->state == HEAD) {
		while (c->length >= 2 && c->buffer[0] == '\r' && c->buffer[1] == '\n')
			consume(c, 2);
		size_t head_length = http_head_length(c->buffer, c->length);
		if (head_length > HTTP_HEAD_LIMIT ||
		    (!head_length && c->length > HTTP_HEAD_LIMIT)) {
			finish(c, 431);
			return false;
		}
		if (!head_length)
			return false;
		struct http_head head;
		const char *why = NULL;
		int status = http_parse_head(c->buffer, head_length, &head, &why);
		consume(c, head_length);
		if (status) {
			if (!why || !*why)
				abort(); /* every refusal says why */
			finish(c, status);
			return false;
		}
		c->t.requests++;
		note_text(&c->t, head.method);
		note_text(&c->t, head.target);
		for (int i = 0; i < head.header_count; i++) {
			note_text(&c->t, head.headers[i].name);
			note_text(&c->t, head.headers[i].value);
		}
		unsigned char flags[3] = {(unsigned char)head.body, head.keep_alive,
					  head.expect_continue};
		note(&c->t, flags, sizeof flags);
		route(&c->t, &head);
		c->state = head.body == HTTP_BODY_LENGTH    ? BODY_LENGTH
			   : head.body == HTTP_BODY_CHUNKED ? BODY_CHUNKED
							    : HEAD;
		c->left = head.content_length;
		http_chunked_init(&c->chunked);
		http_head_free(&head);
		return true;
	}
	if (c->length == 0)
		return false;
	if (c->state == BODY_LENGTH) {
		size_t take = c->length < c->left ? c->length : (size_t)c->left;
		note(&c->t, c->buffer, take);
		consume(c, take);
		c->left -= take;
		if (!c->left)
			c->state = HEAD;
		return true;
	}
	size_t used;
	enum http_chunked_result result =
		http_chunked_feed(&c->chunked, c->buffer, c->length, &used);
	if (used > c->length)
		abort();
	switch (result) {
	case HTTP_CHUNKED_ERROR: finish(c, 400); return false;
	case HTTP_CHUNKED_DATA:
		/* Taken in two parts when it can, as a slow sink would. */
		note(&c->t, c->buffer, used);
		http_chunked_take(&c->chunked, used / 2);
		http_chunked_take(&c->chunked, used - used / 2);
		consume(c, used);
		return true;
	case HTTP_CHUNKED_DONE:
		consume(c, used);
		c->state = HEAD;
		return true;
	case HTTP_CHUNKED_MORE: consume(c, used); return used > 0;
	}
	return false;
}

static void feed(struct conn *c, const uint8_t *bytes, size_t length)
{
	if (c->state == DONE)
		return;
	c->buffer = realloc(c->buffer, c->length + length + 1);
	memcpy(c->buffer + c->length, bytes, length);
	c->length += length;
	while (c->state != DONE && step(c))
		;
}

static struct transcript run(const uint8_t *data, size_t size, const uint8_t *sizes, size_t count)
{
	struct conn c = {.t = {.hash = 1469598103934665603ull}};
	size_t at = 0;
	for (size_t i = 0; at < size; i++) {
		size_t piece = count ? 1 + sizes[i % count] % 97 : size;
		if (piece > size - at)
			piece = size - at;
		feed(&c, data + at, piece);
		at += piece;
	}
	free(c.buffer);
	note(&c.t, &c.t.requests, sizeof c.t.requests);
	return c.t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 8)
		return 0;
	const uint8_t *sizes = data;
	data += 8;
	size -= 8;
	static const uint8_t one = 0;
	struct transcript whole = run(data, size, NULL, 0);
	struct transcript bytes = run(data, size, &one, 1);
	struct transcript pieces = run(data, size, sizes, 8);
	if (whole.hash != bytes.hash || whole.hash != pieces.hash || whole.end != bytes.end ||
	    whole.requests != pieces.requests) {
		fprintf(stderr, "a split changed the meaning: %u/%u/%u requests, end %d/%d/%d\n",
			whole.requests, bytes.requests, pieces.requests, whole.end, bytes.end,
			pieces.end);
		abort();
	}
	return 0;
}
