/* ws-conn.h: a WebSocket session on one of boxd's HTTP connections.
 *
 * A route that speaks WebSocket (GET with Upgrade: websocket) calls
 * ws_accept() from its handler: the handshake is checked, 101 goes out and
 * the connection leaves HTTP for good (the request is over; the router's
 * rules ran before the handler, as for any route). From then on whole
 * messages reach ops->message; pings are answered, the close handshake and
 * the protocol's errors (lib/websocket.h) are handled here, each with its
 * close code, and ops->closed runs once when the session ends, however it
 * ends. The server pings a quiet peer every WS_PING_SEC and drops one that
 * has not answered for WS_DEAD_SEC, so a client that vanished without a
 * FIN does not hold a session for good. All on the event loop. */
#ifndef BOXD_WS_CONN_H
#define BOXD_WS_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct api_request;
struct ws_conn;

/* A client's message (after reassembly) may be at most this big. */
#define WS_MESSAGE_MAX (1u << 20)
#define WS_PING_SEC 30
#define WS_DEAD_SEC 90
/* After ws_close, the peer's close is waited for this long. */
#define WS_CLOSE_WAIT_SEC 2

struct ws_conn_ops {
	/* A whole message from the client: text (valid UTF-8) or binary. */
	void (*message)(void *arg, bool text, const uint8_t *data, size_t length);
	/* What was sent has mostly gone out (ws_pending is low again). */
	void (*drained)(void *arg);
	/* The session is over (closed by either side, or the connection
	 * lost): `ws` is freed right after; do not use it again. */
	void (*closed)(void *arg);
};

/* Checks the request's handshake (GET, Upgrade: websocket, Connection:
 * upgrade, Sec-WebSocket-Version: 13, a Sec-WebSocket-Key): on a bad one
 * answers 400 (426 with Sec-WebSocket-Version: 13 for another version)
 * itself and returns NULL. Else answers 101 and returns the session; the
 * request is answered and must not be used again. */
struct ws_conn *ws_accept(struct api_request *req, const struct ws_conn_ops *ops, void *arg);

/* Sends one message (a single frame). False once the session is closing. */
bool ws_send(struct ws_conn *ws, bool text, const void *data, size_t length);
/* Bytes sent but not yet taken by the socket. */
size_t ws_pending(const struct ws_conn *ws);
/* Starts the close handshake with `code` and `reason`; nothing is sent
 * after it, messages are no longer delivered, and ops->closed runs when the
 * peer's close arrives or after a short wait. */
void ws_close(struct ws_conn *ws, uint16_t code, const char *reason);

#endif
