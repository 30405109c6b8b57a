/* ws-conn.c: a WebSocket session on an upgraded connection (ws-conn.h):
 * the handshake checked and answered, frames read as they arrive (a data
 * frame's payload straight into its message, never the whole frame held
 * twice), control frames answered, the close handshake, the protocol's
 * errors each closed with its code, and a peer that went quiet pinged and
 * then dropped. The framing rules themselves are lib/websocket.c's.
 *
 * The session lives exactly as long as its connection: it is freed only
 * from the connection's `closed`, which runs once however the connection
 * ends, so ops->closed does too. Everything that can end the connection
 * from inside the connection's own callbacks (input, drained) only marks it,
 * and the free waits for the callback's end (connection.c's busy count):
 * a message handler may call ws_send or ws_close freely. */
#include "ws-conn.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "connection.h"
#include "http-errors.h"
#include "router-internal.h"
#include "router.h"
#include "websocket.h"
#include "xalloc.h"

struct ws_conn {
	struct http_conn *conn;
	const struct ws_conn_ops *ops;
	void *arg;
	struct event *timer; /* ping, dead peer, or the wait for the peer's close */
	struct ws_message message;
	/* the data frame being read: its head, and how much of its payload so far */
	bool in_frame;
	struct ws_head head;
	uint64_t frame_read;
	int64_t heard_ms; /* the peer's last byte */
	bool close_sent;  /* nothing more is sent or delivered */
	bool finished;    /* the connection closes: nothing more is read */
};

/* ---- handshake ---- */

/* Whether the comma-separated `list` holds `token` (case-insensitive). */
static bool has_token(const char *list, const char *token)
{
	size_t want = strlen(token);
	for (const char *at = list; at && *at;) {
		at += strspn(at, " \t,");
		size_t length = strcspn(at, ",");
		size_t trimmed = length;
		while (trimmed && (at[trimmed - 1] == ' ' || at[trimmed - 1] == '\t'))
			trimmed--;
		if (trimmed == want && strncasecmp(at, token, want) == 0)
			return true;
		at += length;
	}
	return false;
}

/* 426 for a version other than 13, saying which one boxd speaks (RFC 6455 4.4). */
static void refuse_version(struct api_request *req)
{
	api_add_header(req, "Sec-WebSocket-Version", "13");
	char *body = http_error_json("bad_request", "WebSocket takes Sec-WebSocket-Version: 13");
	api_reply_bytes(req, 426, "application/json", body, strlen(body));
	free(body);
}

/* Checks the handshake; on a bad one answers it and returns false. */
static bool handshake_valid(struct api_request *req, char accept[29])
{
	const char *upgrade = api_header(req, "Upgrade");
	const char *connection = api_header(req, "Connection");
	const char *version = api_header(req, "Sec-WebSocket-Version");
	const char *key = api_header(req, "Sec-WebSocket-Key");
	if (strcmp(api_method(req), "GET") != 0) {
		api_reply_bad_request(req, "a WebSocket handshake is a GET");
		return false;
	}
	if (!upgrade || !has_token(upgrade, "websocket") || !connection ||
	    !has_token(connection, "upgrade")) {
		api_reply_bad_request(req, "this endpoint speaks WebSocket only: send Upgrade: "
					   "websocket and Connection: Upgrade (RFC 6455)");
		return false;
	}
	if (!version || strcmp(version, "13") != 0) {
		refuse_version(req);
		return false;
	}
	if (!key || !ws_accept_key(key, accept)) {
		api_reply_bad_request(req, "Sec-WebSocket-Key must be 16 bytes in base64");
		return false;
	}
	return true;
}

/* ---- sending ---- */

static void send_frame(struct ws_conn *ws, enum ws_opcode opcode, const void *data, size_t length)
{
	uint8_t head[WS_HEAD_MAX];
	size_t head_length = ws_write_head(head, opcode, true, length, NULL);
	http_conn_raw_write(ws->conn, head, head_length);
	http_conn_raw_write(ws->conn, data, length);
}

static void send_close(struct ws_conn *ws, uint16_t code, const char *reason)
{
	uint8_t payload[WS_CONTROL_MAX];
	size_t length = ws_close_payload(payload, code, reason);
	send_frame(ws, WS_CLOSE, payload, length);
	ws->close_sent = true;
}

/* The connection closes once what was sent has gone. May free the session
 * (and run ops->closed) right here, unless a callback of the connection's
 * is running: the caller does not touch `ws` after it but in one. */
static void finish(struct ws_conn *ws, bool linger)
{
	ws->finished = true;
	ws->close_sent = true;
	event_del(ws->timer);
	http_conn_raw_close(ws->conn, linger);
}

static const char *reason_of(uint16_t code)
{
	switch (code) {
	case WS_CLOSE_PROTOCOL: return "protocol error";
	case WS_CLOSE_INVALID_DATA: return "a text message that is not UTF-8";
	case WS_CLOSE_TOO_BIG: return "a message over 1 MiB";
	default: return "";
	}
}

/* The peer broke the protocol: a close with the code, then the end. What
 * it still sends is read and dropped for a moment, so it reads the close. */
static void fail(struct ws_conn *ws, uint16_t code)
{
	if (!ws->close_sent)
		send_close(ws, code, reason_of(code));
	finish(ws, true);
}

/* ---- receiving ---- */

static void on_control(struct ws_conn *ws, const struct ws_head *head, const uint8_t *payload)
{
	if (head->opcode == WS_PING) {
		if (!ws->close_sent)
			send_frame(ws, WS_PONG, payload, (size_t)head->length);
		return;
	}
	if (head->opcode != WS_CLOSE)
		return; /* a pong: hearing it was the point */
	uint16_t code;
	if (!ws_close_parse(payload, (size_t)head->length, &code)) {
		fail(ws, WS_CLOSE_PROTOCOL);
		return;
	}
	/* The peer's close answered with the same code (or ours was sent
	 * already); the peer sends nothing after it, so no lingering. */
	if (!ws->close_sent)
		send_close(ws, code, NULL);
	finish(ws, false);
}

/* A piece of the current data frame's (unmasked) payload: into the message,
 * which goes to ops->message when complete. */
static void take_piece(struct ws_conn *ws, const uint8_t *data, size_t length)
{
	bool first = ws->frame_read == 0;
	ws->frame_read += length;
	bool last = ws->frame_read == ws->head.length;
	if (last)
		ws->in_frame = false;
	if (ws->close_sent)
		return; /* closing: read to find the peer's close, not delivered */
	enum ws_opcode opcode = first ? ws->head.opcode : WS_CONTINUATION;
	int result = ws_message_add(&ws->message, opcode, last && ws->head.fin, data, length);
	if (result < 0) {
		fail(ws, (uint16_t)-result);
		return;
	}
	if (result == 1) {
		ws->ops->message(ws->arg, ws->message.opcode == WS_TEXT, ws->message.data,
				 ws->message.length);
		ws_message_reset(&ws->message);
	}
}

/* A frame's head, and a control frame whole. False when more must come. */
static bool take_head(struct ws_conn *ws, struct evbuffer *input)
{
	uint8_t bytes[WS_HEAD_MAX];
	ev_ssize_t have = evbuffer_copyout(input, bytes, sizeof bytes);
	struct ws_head head;
	/* A frame that cannot fit in the message is refused from its head,
	 * before any of its payload is read. */
	uint64_t room = WS_MESSAGE_MAX - ws->message.length;
	int result = ws_parse_head(bytes, have > 0 ? (size_t)have : 0, true, room, &head);
	if (result < 0)
		fail(ws, (uint16_t)-result);
	if (result <= 0)
		return false;
	if (head.opcode & 0x8) {
		uint8_t payload[WS_CONTROL_MAX];
		size_t length = (size_t)head.length;
		if (evbuffer_get_length(input) < head.head_length + length)
			return false;
		evbuffer_drain(input, head.head_length);
		evbuffer_remove(input, payload, length);
		ws_mask(payload, length, head.mask, 0);
		on_control(ws, &head, payload);
		return true;
	}
	evbuffer_drain(input, head.head_length);
	ws->head = head;
	ws->in_frame = true;
	ws->frame_read = 0;
	if (head.length == 0)
		take_piece(ws, NULL, 0);
	return true;
}

/* What has arrived of the current data frame's payload, unmasked in place
 * in the input's first chunk. False when more must come. */
static bool take_payload(struct ws_conn *ws, struct evbuffer *input)
{
	struct evbuffer_iovec chunk;
	if (evbuffer_peek(input, -1, NULL, &chunk, 1) < 1 || chunk.iov_len == 0)
		return false;
	uint64_t left = ws->head.length - ws->frame_read;
	size_t length = chunk.iov_len < left ? chunk.iov_len : (size_t)left;
	ws_mask(chunk.iov_base, length, ws->head.mask, ws->frame_read);
	take_piece(ws, chunk.iov_base, length);
	evbuffer_drain(input, length);
	return true;
}

static void on_input(void *arg, struct evbuffer *input)
{
	struct ws_conn *ws = arg;
	ws->heard_ms = clock_monotonic_ms();
	while (!ws->finished) {
		bool more = ws->in_frame ? take_payload(ws, input) : take_head(ws, input);
		if (!more)
			break;
	}
}

static void on_drained(void *arg)
{
	struct ws_conn *ws = arg;
	if (!ws->close_sent && ws->ops->drained)
		ws->ops->drained(ws->arg);
}

static void on_closed(void *arg)
{
	struct ws_conn *ws = arg;
	ws->finished = true;
	ws->close_sent = true;
	event_free(ws->timer);
	ws_message_free(&ws->message);
	ws->ops->closed(ws->arg);
	free(ws);
}

static const struct http_raw_ops raw_ops = {
	.input = on_input,
	.drained = on_drained,
	.closed = on_closed,
};

/* ---- liveness ---- */

static void arm(struct ws_conn *ws, int64_t ms)
{
	struct timeval delay = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
	event_add(ws->timer, &delay);
}

/* A peer quiet for WS_PING_SEC is pinged (its pong, or anything, is heard);
 * one quiet for WS_DEAD_SEC is gone. After ws_close, the wait is over. */
static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct ws_conn *ws = arg;
	if (ws->close_sent) {
		finish(ws, false); /* may free ws */
		return;
	}
	int64_t quiet = clock_monotonic_ms() - ws->heard_ms;
	if (quiet >= WS_DEAD_SEC * 1000) {
		finish(ws, false); /* may free ws */
		return;
	}
	int64_t next = WS_PING_SEC * 1000 - quiet;
	if (next <= 0) {
		send_frame(ws, WS_PING, NULL, 0);
		next = WS_PING_SEC * 1000;
		if (next > WS_DEAD_SEC * 1000 - quiet)
			next = WS_DEAD_SEC * 1000 - quiet;
	}
	arm(ws, next);
}

/* ---- the interface ---- */

struct ws_conn *ws_accept(struct api_request *req, const struct ws_conn_ops *ops, void *arg)
{
	char accept[29];
	if (!handshake_valid(req, accept))
		return NULL;
	struct ws_conn *ws = xcalloc(1, sizeof *ws);
	ws->ops = ops;
	ws->arg = arg;
	ws->heard_ms = clock_monotonic_ms();
	ws_message_init(&ws->message, WS_MESSAGE_MAX);
	ws->timer = evtimer_new(api_base(req), on_timer, ws);
	char headers[160];
	snprintf(headers, sizeof headers,
		 "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n",
		 accept);
	ws->conn = api_upgrade(req, headers, &raw_ops, ws);
	if (!ws->conn) {
		event_free(ws->timer);
		free(ws);
		return NULL;
	}
	arm(ws, WS_PING_SEC * 1000);
	return ws;
}

bool ws_send(struct ws_conn *ws, bool text, const void *data, size_t length)
{
	if (ws->close_sent)
		return false;
	send_frame(ws, text ? WS_TEXT : WS_BINARY, data, length);
	return true;
}

size_t ws_pending(const struct ws_conn *ws)
{
	return http_conn_pending(ws->conn);
}

void ws_close(struct ws_conn *ws, uint16_t code, const char *reason)
{
	if (ws->close_sent)
		return;
	send_close(ws, code, reason);
	event_del(ws->timer);
	arm(ws, WS_CLOSE_WAIT_SEC * 1000);
}
