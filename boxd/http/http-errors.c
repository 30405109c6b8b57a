/* http-errors.c: the errors evhttp sends by itself, in the contract's JSON.
 *
 * libevent 2.1 answers some requests before boxd's router sees them: a body
 * past the single-request limit (413, then it closes), a request that is
 * not HTTP (400). It writes its own HTML page and offers no hook to word
 * it. So each connection's output buffer carries a callback that, while the
 * router is not answering on that connection, replaces such a complete
 * HTML error response with the same status and headers and a JSON body
 * ({"error":{"code","message"}}). While the router answers (from dispatch
 * until the response is complete) the callback is off, so nothing boxd
 * sends (downloads included) is ever looked at. */
#include "http-errors.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"

#define HEAD_LIMIT 2048 /* evhttp's error heads are a few lines */

static const char *code_for(int status)
{
	switch (status) {
	case 400: return "bad_request";
	case 404: return "not_found";
	case 405: return "method_not_allowed";
	case 408: return "timeout";
	case 413: return "payload_too_large";
	case 431: return "header_too_large";
	case 503: return "unavailable";
	default: return status >= 500 ? "internal" : "bad_request";
	}
}

static const char *message_for(int status)
{
	switch (status) {
	case 413:
		return "the request is larger than one request may be (a body of at most 64 MiB); "
		       "send bigger uploads in pieces through /v1/uploads";
	case 400: return "the request is not valid HTTP/1.1";
	default: return "the request could not be read";
	}
}

/* The value of header `name` in `head` (ending "\r\n\r\n"), or NULL. */
static const char *header_value(const char *head, const char *name)
{
	size_t length = strlen(name);
	for (const char *line = strstr(head, "\r\n"); line && line[2] != '\r';
	     line = strstr(line + 2, "\r\n")) {
		if (strncasecmp(line + 2, name, length) == 0 && line[2 + length] == ':') {
			const char *value = line + 3 + length;
			while (*value == ' ')
				value++;
			return value;
		}
	}
	return NULL;
}

static void rewrite(struct evbuffer *output, const struct evbuffer_cb_info *info, void *arg);

/* The first bytes of `buffer` (evbuffer_copyout refuses while its start is
 * frozen, as a bufferevent's output is). */
static size_t copy_start(struct evbuffer *buffer, char *out, size_t limit)
{
	struct evbuffer_iovec pieces[8];
	int count = evbuffer_peek(buffer, (ev_ssize_t)limit, NULL, pieces, 8);
	size_t used = 0;
	for (int i = 0; i < count && i < 8 && used < limit; i++) {
		size_t take = pieces[i].iov_len < limit - used ? pieces[i].iov_len : limit - used;
		memcpy(out + used, pieces[i].iov_base, take);
		used += take;
	}
	return used;
}

static void watch(struct evbuffer *output, bool on)
{
	evbuffer_remove_cb(output, rewrite, NULL);
	if (on)
		evbuffer_add_cb(output, rewrite, NULL);
}

static void rewrite(struct evbuffer *output, const struct evbuffer_cb_info *info, void *arg)
{
	(void)arg;
	if (info->n_added == 0)
		return;
	char head[HEAD_LIMIT + 1];
	size_t got = copy_start(output, head, HEAD_LIMIT);
	if (got < 12)
		return;
	head[got] = '\0';
	if (strncmp(head, "HTTP/1.1 4", 10) != 0 && strncmp(head, "HTTP/1.0 4", 10) != 0 &&
	    strncmp(head, "HTTP/1.1 5", 10) != 0 && strncmp(head, "HTTP/1.0 5", 10) != 0)
		return;
	char *end = strstr(head, "\r\n\r\n");
	if (!end)
		return; /* not all of the head yet */
	end[2] = '\0'; /* the head, its last line's "\r\n" kept */
	const char *type = header_value(head, "Content-Type");
	const char *length_text = header_value(head, "Content-Length");
	if (!type || strncasecmp(type, "text/html", 9) != 0 || !length_text)
		return;
	size_t head_length = (size_t)(end - head) + 4;
	size_t body_length = strtoul(length_text, NULL, 10);
	if (evbuffer_get_length(output) != head_length + body_length)
		return; /* the body is still coming, or more follows: not evhttp's page */
	int status = atoi(head + 9);
	char body[512];
	int body_size = snprintf(body, sizeof body,
				 "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}",
				 code_for(status), message_for(status));
	/* The same status line and headers, but the body's type and length. */
	struct evbuffer *answer = evbuffer_new();
	const char *line = head;
	while (*line) {
		const char *next = strstr(line, "\r\n") + 2;
		bool ours = strncasecmp(line, "Content-Type:", 13) == 0 ||
			    strncasecmp(line, "Content-Length:", 15) == 0;
		if (!ours)
			evbuffer_add(answer, line, (size_t)(next - line));
		line = next;
	}
	evbuffer_add_printf(answer, "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			    body_size, body);
	/* A bufferevent keeps the start of its output frozen except while it
	 * writes (nothing of it is written yet): thawed for the swap. */
	watch(output, false); /* the additions below are ours */
	evbuffer_unfreeze(output, 1);
	evbuffer_drain(output, head_length + body_length);
	evbuffer_freeze(output, 1);
	evbuffer_add_buffer(output, answer);
	evbuffer_free(answer);
	watch(output, true);
}

static struct bufferevent *new_connection(struct event_base *base, void *arg)
{
	(void)arg;
	struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (bev)
		watch(bufferevent_get_output(bev), true);
	return bev;
}

static void answered(struct evhttp_request *req, void *arg)
{
	(void)req;
	watch(bufferevent_get_output(arg), true);
}

void http_errors_attach(struct evhttp *http)
{
	evhttp_set_bevcb(http, new_connection, NULL);
}

void http_errors_router_answers(struct evhttp_request *req)
{
	struct evhttp_connection *connection = evhttp_request_get_connection(req);
	struct bufferevent *bev = connection ? evhttp_connection_get_bufferevent(connection) : NULL;
	if (!bev)
		return;
	watch(bufferevent_get_output(bev), false);
	evhttp_request_set_on_complete_cb(req, answered, bev);
}
