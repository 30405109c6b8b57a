/* test-ws-conn.c: WebSocket sessions end to end on boxd's own HTTP layer:
 * real connections (one end of a socketpair each, served by
 * http_conn_accept on a libevent loop in a thread of its own) to a route
 * whose handler calls ws_accept and echoes, spoken to by a client here
 * that sends what real and hostile clients send. Checks the handshake's
 * answers, echoes through fragments and pings, each protocol error's close
 * code, the close handshake both ways, a handler closing from inside its
 * message callback, the wait for a silent peer's close, and that `closed`
 * runs once per session however it ends (boxd stopping included). */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "connection.h"
#include "router-internal.h"
#include "router.h"
#include "websocket.h"
#include "ws-conn.h"

/* ---- the server: a loop in its own thread ---- */

static struct event_base *base;
static int control[2]; /* the client hands the server fds (-1: stop) */
static atomic_int accepted, closed, delivered;
/* What the server's callbacks saw wrong (CHECK is the client thread's). */
static atomic_int server_failures;

struct session {
	struct ws_conn *ws;
	size_t flood_left; /* bytes still to send, as the socket takes them */
};

/* A flood goes out in 64 KiB messages while less than this waits. */
#define FLOOD_PENDING (512u << 10)
#define FLOOD_PIECE (64u << 10)
#define FLOOD_BYTES (8u << 20)

/* Sends what the socket takes of the flood: the back-pressure a command's
 * output relies on. */
static void flood(struct session *session)
{
	static uint8_t piece[FLOOD_PIECE];
	while (session->flood_left && ws_pending(session->ws) < FLOOD_PENDING) {
		if (!ws_send(session->ws, false, piece, FLOOD_PIECE))
			return;
		session->flood_left -= FLOOD_PIECE;
	}
	if (ws_pending(session->ws) > FLOOD_PENDING + FLOOD_PIECE)
		atomic_fetch_add(&server_failures, 1);
}

static void on_drained(void *arg)
{
	flood(arg);
}

/* Echoes each message; a few texts ask for something else. */
static void on_message(void *arg, bool text, const uint8_t *data, size_t length)
{
	struct session *session = arg;
	atomic_fetch_add(&delivered, 1);
	if (text && length == 8 && memcmp(data, "close-me", 8) == 0) {
		ws_close(session->ws, WS_CLOSE_NORMAL, "asked to");
		/* Closing: nothing more goes out. */
		if (ws_send(session->ws, true, "late", 4))
			atomic_fetch_add(&server_failures, 1);
		return;
	}
	if (text && length == 5 && memcmp(data, "flood", 5) == 0) {
		session->flood_left = FLOOD_BYTES;
		flood(session);
		return;
	}
	if (text && length == 6 && memcmp(data, "twice!", 6) == 0)
		ws_send(session->ws, true, data, length);
	if (!ws_send(session->ws, text, data, length))
		atomic_fetch_add(&server_failures, 1);
}

static void on_closed(void *arg)
{
	atomic_fetch_add(&closed, 1);
	free(arg);
}

static const struct ws_conn_ops echo_ops = {
	.message = on_message,
	.drained = on_drained,
	.closed = on_closed,
};

static void handle_ws(struct api_request *req)
{
	struct session *session = calloc(1, sizeof *session);
	session->ws = ws_accept(req, &echo_ops, session);
	if (session->ws)
		atomic_fetch_add(&accepted, 1);
	else
		free(session);
}

static const struct api_route routes[] = {
	{"GET", "/ws", 0, 0, handle_ws},
	{0},
};
static const struct api_route *const tables[] = {routes, NULL};

static void on_control(evutil_socket_t fd, short what, void *arg)
{
	int given;
	if (read(fd, &given, sizeof given) != sizeof given || given < 0) {
		http_conn_close_all(); /* as boxd stops */
		event_base_loopexit(base, NULL);
		return;
	}
	http_conn_accept(given);
}

static void *serve(void *arg)
{
	event_base_dispatch(base);
	return NULL;
}

static void server_start(pthread_t *thread)
{
	base = event_base_new();
	static const struct router_hooks hooks = {0};
	router_setup(tables, &hooks);
	router_serve(base);
	static const struct http_conn_router router = {
		.begin = api_request_begin,
		.body_limit = api_request_body_limit,
		.streams_body = api_request_streams_body,
		.too_large = api_request_too_large,
		.run = api_request_run,
		.lost = api_request_lost,
		.fail = api_request_fail,
	};
	http_conn_setup(base, 60, &router);
	if (pipe(control) != 0)
		abort();
	event_add(event_new(base, control[0], EV_READ | EV_PERSIST, on_control, NULL), NULL);
	pthread_create(thread, NULL, serve, NULL);
}

/* ---- the client ---- */

/* A new connection to the server (blocking, with a timeout). */
static int dial(void)
{
	int fds[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0)
		abort();
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	if (write(control[1], &fds[1], sizeof fds[1]) != sizeof fds[1])
		abort();
	struct timeval limit = {5, 0};
	setsockopt(fds[0], SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
	return fds[0];
}

static void send_all(int fd, const void *data, size_t length)
{
	const char *at = data;
	while (length) {
		ssize_t n = send(fd, at, length, MSG_NOSIGNAL);
		if (n <= 0)
			return;
		at += n;
		length -= (size_t)n;
	}
}

/* Reads exactly `length` bytes; false on EOF or timeout. */
static bool recv_all(int fd, void *data, size_t length)
{
	char *at = data;
	while (length) {
		ssize_t n = recv(fd, at, length, 0);
		if (n <= 0)
			return false;
		at += n;
		length -= (size_t)n;
	}
	return true;
}

/* The answer's head, up to the blank line. */
static bool read_head(int fd, char *out, size_t size)
{
	size_t used = 0;
	while (used + 1 < size) {
		if (recv(fd, out + used, 1, 0) != 1)
			return false;
		used++;
		out[used] = '\0';
		if (used >= 4 && memcmp(out + used - 4, "\r\n\r\n", 4) == 0)
			return true;
	}
	return false;
}

static const char KEY[] = "dGhlIHNhbXBsZSBub25jZQ==";

/* Sends a handshake with `extra` headers (the defaults when NULL) and
 * returns the answer's status; `head` gets the head. */
static int handshake(int fd, const char *extra, char *head, size_t size)
{
	char request[512];
	snprintf(request, sizeof request, "GET /ws HTTP/1.1\r\nHost: boxd\r\n%s\r\n",
		 extra ? extra
		       : "Upgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
			 "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: "
			 "dGhlIHNhbXBsZSBub25jZQ==\r\n"
			 "Sec-WebSocket-Extensions: permessage-deflate\r\n");
	send_all(fd, request, strlen(request));
	if (!read_head(fd, head, size))
		return -1;
	return atoi(head + 9);
}

/* A session: connected and upgraded. */
static int open_session(void)
{
	int fd = dial();
	char head[1024];
	int status = handshake(fd, NULL, head, sizeof head);
	CHECKF(status == 101, "status %d: %s", status, head);
	char accept[29];
	ws_accept_key(KEY, accept);
	char line[64];
	snprintf(line, sizeof line, "Sec-WebSocket-Accept: %s\r\n", accept);
	CHECKF(strstr(head, line) && strstr(head, "Upgrade: websocket\r\n") &&
		       !strstr(head, "Extensions"),
	       "%s", head);
	return fd;
}

static const uint8_t MASK[4] = {0xa1, 0x05, 0x7e, 0x33};

/* A client's frame, masked unless `unmasked`; `first` ORed into byte 0 (rsv bits). */
static void send_frame(int fd, uint8_t first, enum ws_opcode opcode, bool fin, const void *data,
		       size_t length, bool unmasked)
{
	uint8_t head[WS_HEAD_MAX];
	size_t head_length = ws_write_head(head, opcode, fin, length, unmasked ? NULL : MASK);
	head[0] |= first;
	uint8_t *frame = malloc(head_length + length + 1);
	memcpy(frame, head, head_length);
	if (length)
		memcpy(frame + head_length, data, length);
	if (!unmasked)
		ws_mask(frame + head_length, length, MASK, 0);
	send_all(fd, frame, head_length + length);
	free(frame);
}

static void send_message(int fd, enum ws_opcode opcode, const void *data, size_t length)
{
	send_frame(fd, 0, opcode, true, data, length, false);
}

/* A server's frame: its opcode (-1 on EOF or a bad head) and payload (caller frees). */
static int recv_frame(int fd, uint8_t **payload, size_t *length)
{
	uint8_t head[WS_HEAD_MAX];
	size_t have = 0;
	struct ws_head parsed;
	int result;
	while ((result = ws_parse_head(head, have, false, UINT64_MAX, &parsed)) == 0) {
		if (!recv_all(fd, head + have, 1))
			return -1;
		have++;
	}
	if (result < 0)
		return -1;
	*length = (size_t)parsed.length;
	*payload = malloc(*length + 1);
	if (!recv_all(fd, *payload, *length)) {
		free(*payload);
		return -1;
	}
	return parsed.opcode;
}

/* The next frame must be a close with `code`; true then. */
static bool expect_close(int fd, uint16_t code)
{
	uint8_t *payload;
	size_t length;
	int opcode = recv_frame(fd, &payload, &length);
	if (opcode != WS_CLOSE) {
		fprintf(stderr, "expected a close %u, got opcode %d\n", code, opcode);
		if (opcode >= 0)
			free(payload);
		return false;
	}
	uint16_t got = 0;
	bool valid = ws_close_parse(payload, length, &got);
	free(payload);
	if (!valid || got != code)
		fprintf(stderr, "expected close %u, got %u\n", code, got);
	return valid && got == code;
}

/* The server closes the connection (EOF) within the timeout. */
static bool expect_eof(int fd)
{
	char byte;
	for (;;) {
		ssize_t n = recv(fd, &byte, 1, 0);
		if (n == 0)
			return true;
		if (n < 0)
			return errno == ECONNRESET;
	}
}

static bool expect_message(int fd, int opcode, const void *data, size_t length)
{
	uint8_t *payload;
	size_t got;
	int got_opcode = recv_frame(fd, &payload, &got);
	if (got_opcode < 0)
		return false;
	bool same = got_opcode == opcode && got == length && memcmp(payload, data, length) == 0;
	if (!same)
		fprintf(stderr, "got opcode %d, %zu bytes\n", got_opcode, got);
	free(payload);
	return same;
}

static void wait_closed(int count)
{
	for (int i = 0; i < 500 && atomic_load(&closed) < count; i++)
		usleep(10000);
}

/* ---- the cases ---- */

static void handshake_refusals(void)
{
	char head[2048];
	int fd = dial();
	CHECK(handshake(fd,
			"Upgrade: websocket\r\nConnection: Upgrade\r\n"
			"Sec-WebSocket-Version: 13\r\n",
			head, sizeof head) == 400);
	close(fd);
	fd = dial();
	CHECK(handshake(fd,
			"Upgrade: websocket\r\nConnection: Upgrade\r\n"
			"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: c2hvcnQ=\r\n",
			head, sizeof head) == 400);
	close(fd);
	fd = dial();
	CHECK(handshake(
		      fd,
		      "Upgrade: websocket\r\nConnection: Upgrade\r\n"
		      "Sec-WebSocket-Version: 8\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
		      head, sizeof head) == 426);
	CHECKF(strstr(head, "Sec-WebSocket-Version: 13\r\n"), "%s", head);
	close(fd);
	fd = dial();
	CHECK(handshake(fd,
			"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
			"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
			head, sizeof head) == 400);
	close(fd);
	fd = dial();
	CHECK(handshake(fd,
			"Upgrade: h2c, WebSocket\r\nConnection: keep-alive\r\n"
			"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: "
			"dGhlIHNhbXBsZSBub25jZQ==\r\n",
			head, sizeof head) == 400);
	close(fd);
	CHECK(atomic_load(&accepted) == 0);
}

static void echoes(void)
{
	int fd = open_session();
	send_message(fd, WS_BINARY, "hello", 5);
	CHECK(expect_message(fd, WS_BINARY, "hello", 5));
	send_message(fd, WS_TEXT, "", 0);
	CHECK(expect_message(fd, WS_TEXT, "", 0));
	/* A text in three fragments, a ping between them, and an é split. */
	send_frame(fd, 0, WS_TEXT, false, "caf", 3, false);
	send_frame(fd, 0, WS_PING, true, "are you there", 13, false);
	send_frame(fd, 0, WS_CONTINUATION, false, "\xc3", 1, false);
	send_frame(fd, 0, WS_CONTINUATION, true, "\xa9!", 2, false);
	CHECK(expect_message(fd, WS_PONG, "are you there", 13));
	CHECK(expect_message(fd, WS_TEXT, "caf\xc3\xa9!", 6));
	/* A pong nobody asked for is fine. */
	send_frame(fd, 0, WS_PONG, true, "x", 1, false);
	/* Two answers to one message, both in order. */
	send_message(fd, WS_TEXT, "twice!", 6);
	CHECK(expect_message(fd, WS_TEXT, "twice!", 6));
	CHECK(expect_message(fd, WS_TEXT, "twice!", 6));
	/* 1 MiB exactly, in fragments of 100,000, sent a byte at a time for the first. */
	size_t total = WS_MESSAGE_MAX;
	uint8_t *big = malloc(total);
	for (size_t i = 0; i < total; i++)
		big[i] = (uint8_t)(i * 7);
	for (size_t at = 0; at < total; at += 100000) {
		size_t piece = total - at < 100000 ? total - at : 100000;
		send_frame(fd, 0, at ? WS_CONTINUATION : WS_BINARY, at + piece == total, big + at,
			   piece, false);
	}
	CHECK(expect_message(fd, WS_BINARY, big, total));
	free(big);
	/* A frame sent one byte at a time. */
	uint8_t frame[WS_HEAD_MAX + 5];
	size_t head_length = ws_write_head(frame, WS_BINARY, true, 5, MASK);
	memcpy(frame + head_length, "bytes", 5);
	ws_mask(frame + head_length, 5, MASK, 0);
	for (size_t i = 0; i < head_length + 5; i++) {
		send_all(fd, frame + i, 1);
		usleep(1000);
	}
	CHECK(expect_message(fd, WS_BINARY, "bytes", 5));
	/* 8 MiB sent only as fast as this reads it. */
	send_message(fd, WS_TEXT, "flood", 5);
	size_t flooded = 0;
	for (;;) {
		uint8_t *payload;
		size_t length;
		int opcode = recv_frame(fd, &payload, &length);
		if (opcode < 0)
			break;
		free(payload);
		flooded += length;
		if (flooded >= FLOOD_BYTES)
			break;
		if (flooded % (1u << 20) == 0)
			usleep(20000); /* a slow reader */
	}
	CHECKF(flooded == FLOOD_BYTES, "%zu", flooded);
	/* The close handshake from the client: echoed, then the end. */
	int before = atomic_load(&closed);
	uint8_t payload[WS_CONTROL_MAX];
	size_t length = ws_close_payload(payload, WS_CLOSE_NORMAL, "done");
	send_frame(fd, 0, WS_CLOSE, true, payload, length, false);
	CHECK(expect_close(fd, WS_CLOSE_NORMAL));
	CHECK(expect_eof(fd));
	close(fd);
	wait_closed(before + 1);
	CHECK(atomic_load(&closed) == before + 1);
}

/* A hostile frame gets the close with `code`, then the end. */
static void refused(uint8_t first, enum ws_opcode opcode, bool fin, const void *data, size_t length,
		    bool unmasked, uint16_t code, const char *what)
{
	int before = atomic_load(&closed);
	int fd = open_session();
	send_frame(fd, first, opcode, fin, data, length, unmasked);
	bool closed_right = expect_close(fd, code);
	CHECKF(closed_right, "%s", what);
	CHECKF(expect_eof(fd), "%s", what);
	close(fd);
	wait_closed(before + 1);
	CHECKF(atomic_load(&closed) == before + 1, "%s", what);
}

static void protocol_errors(void)
{
	refused(0, WS_BINARY, true, "x", 1, true, WS_CLOSE_PROTOCOL, "unmasked");
	refused(0x40, WS_BINARY, true, "x", 1, false, WS_CLOSE_PROTOCOL, "rsv1");
	refused(0x10, WS_TEXT, true, "x", 1, false, WS_CLOSE_PROTOCOL, "rsv3");
	refused(0, (enum ws_opcode)3, true, "x", 1, false, WS_CLOSE_PROTOCOL, "opcode 3");
	refused(0, (enum ws_opcode)0xb, true, "x", 1, false, WS_CLOSE_PROTOCOL, "opcode 0xb");
	refused(0, WS_PING, false, "x", 1, false, WS_CLOSE_PROTOCOL, "fragmented ping");
	refused(0, WS_CONTINUATION, true, "x", 1, false, WS_CLOSE_PROTOCOL, "lone continuation");
	refused(0, WS_TEXT, true, "\xc0\xaf", 2, false, WS_CLOSE_INVALID_DATA, "overlong");
	refused(0, WS_TEXT, true, "\xed\xa0\x80", 3, false, WS_CLOSE_INVALID_DATA, "surrogate");
	refused(0, WS_CLOSE, true, "\x03", 1, false, WS_CLOSE_PROTOCOL, "close of 1 byte");
	refused(0, WS_CLOSE, true, "\x03\xed", 2, false, WS_CLOSE_PROTOCOL, "close code 1005");
	uint8_t ping[126];
	memset(ping, 'p', sizeof ping);
	refused(0, WS_PING, true, ping, sizeof ping, false, WS_CLOSE_PROTOCOL, "ping of 126");

	/* Over 1 MiB: refused from the head, its payload never sent. */
	int before = atomic_load(&closed);
	int fd = open_session();
	uint8_t head[WS_HEAD_MAX];
	size_t head_length = ws_write_head(head, WS_BINARY, true, WS_MESSAGE_MAX + 1, MASK);
	send_all(fd, head, head_length);
	CHECK(expect_close(fd, WS_CLOSE_TOO_BIG));
	CHECK(expect_eof(fd));
	close(fd);
	/* ... and in fragments that add up to more. */
	fd = open_session();
	uint8_t *half = calloc(1, WS_MESSAGE_MAX / 2 + 1);
	send_frame(fd, 0, WS_BINARY, false, half, WS_MESSAGE_MAX / 2 + 1, false);
	head_length = ws_write_head(head, WS_CONTINUATION, true, WS_MESSAGE_MAX / 2, MASK);
	send_all(fd, head, head_length);
	CHECK(expect_close(fd, WS_CLOSE_TOO_BIG));
	CHECK(expect_eof(fd));
	close(fd);
	free(half);
	wait_closed(before + 2);
	CHECK(atomic_load(&closed) == before + 2);
}

static void server_closes(void)
{
	/* The handler closes from inside its message callback; the client answers. */
	int before = atomic_load(&closed);
	int fd = open_session();
	send_message(fd, WS_TEXT, "close-me", 8);
	CHECK(expect_close(fd, WS_CLOSE_NORMAL));
	/* A message after the handler's close is not delivered. */
	int delivered_before = atomic_load(&delivered);
	send_message(fd, WS_TEXT, "ignored", 7);
	uint8_t payload[2] = {0x03, 0xe8};
	send_frame(fd, 0, WS_CLOSE, true, payload, 2, false);
	CHECK(expect_eof(fd));
	close(fd);
	wait_closed(before + 1);
	CHECK(atomic_load(&closed) == before + 1);
	CHECK(atomic_load(&delivered) == delivered_before);

	/* A client that never answers the close is dropped after the wait. */
	fd = open_session();
	send_message(fd, WS_TEXT, "close-me", 8);
	struct timespec start, end;
	clock_gettime(CLOCK_MONOTONIC, &start);
	CHECK(expect_close(fd, WS_CLOSE_NORMAL));
	CHECK(expect_eof(fd));
	clock_gettime(CLOCK_MONOTONIC, &end);
	double took = (double)(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
	CHECKF(took > WS_CLOSE_WAIT_SEC - 0.5 && took < WS_CLOSE_WAIT_SEC + 2, "%.2f s", took);
	close(fd);
	wait_closed(before + 2);
	CHECK(atomic_load(&closed) == before + 2);
}

static void client_vanishes(void)
{
	int before = atomic_load(&closed);
	int fd = open_session();
	/* Half a frame, then gone. */
	send_all(fd, "\x82\xfe\x01", 3);
	close(fd);
	fd = open_session();
	close(fd);
	wait_closed(before + 2);
	CHECK(atomic_load(&closed) == before + 2);
}

int main(void)
{
	pthread_t thread;
	server_start(&thread);
	handshake_refusals();
	echoes();
	protocol_errors();
	server_closes();
	client_vanishes();
	/* Sessions still open when boxd stops are closed, each once. */
	int before = atomic_load(&closed);
	int open_one = open_session(), open_two = open_session();
	send_message(open_two, WS_BINARY, "x", 1);
	CHECK(expect_message(open_two, WS_BINARY, "x", 1));
	int stop = -1;
	CHECK(write(control[1], &stop, sizeof stop) == sizeof stop);
	pthread_join(thread, NULL);
	CHECK(atomic_load(&closed) == before + 2);
	CHECK(expect_eof(open_one) && expect_eof(open_two));
	CHECKF(atomic_load(&accepted) == atomic_load(&closed), "%d accepted, %d closed",
	       atomic_load(&accepted), atomic_load(&closed));
	CHECK(atomic_load(&server_failures) == 0);
	close(open_one);
	close(open_two);
	return check_done("ws-conn");
}
