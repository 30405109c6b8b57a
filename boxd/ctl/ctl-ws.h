/* ctl-ws.h: the client side of a WebSocket over boxctl's connection to
 * boxd, on the codec in lib/websocket.h: the handshake, frames sent masked
 * (RFC 6455 5.3: a client's frames must be, each with a fresh key), and
 * the server's frames read back as whole messages or control frames. The
 * caller owns the poll loop: ctl_ws_fd is the socket to watch. */
#ifndef BOXD_CTL_WS_H
#define BOXD_CTL_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "websocket.h"

struct ctl_ws {
	int fd;
	uint8_t *in; /* received, not yet parsed: in[0..in_length) */
	size_t in_length, in_capacity;
	struct ws_message message;
	uint8_t control[WS_CONTROL_MAX];
	bool message_done; /* the last event was `message`: reset it next time */
};

/* What ctl_ws_next found. `data` stays valid until the next call. */
struct ctl_ws_event {
	enum ws_opcode opcode; /* WS_TEXT, WS_BINARY, WS_PING, WS_PONG or WS_CLOSE */
	const uint8_t *data;
	size_t length;
};

/* Upgrades `client`'s connection at `path` (GET). 0 when the server
 * switched and answered the key rightly; else 1 (CTL_API_ERROR): when boxd
 * answered with an error, that answer is in `refused` (the caller's to
 * print and free) with nothing printed; on any other failure `refused`
 * stays empty (status 0) and why is printed. */
int ctl_ws_open(struct ctl_ws *ws, struct client *client, const char *path,
		struct client_response *refused);
void ctl_ws_free(struct ctl_ws *ws);

/* Sends one whole frame, masked. False when the connection is gone. */
bool ctl_ws_send(struct ctl_ws *ws, enum ws_opcode opcode, const void *data, size_t length);
/* Sends a close frame with `code` (and no reason). */
bool ctl_ws_send_close(struct ctl_ws *ws, uint16_t code);

/* Reads what the socket has now (one read). False at its end or on an
 * error; what was received before stays to be parsed. */
bool ctl_ws_receive(struct ctl_ws *ws);
/* The next message or control frame from what was received: 1 with
 * `event` filled, 0 when more bytes are needed, or minus a close code when
 * the server broke the protocol. */
int ctl_ws_next(struct ctl_ws *ws, struct ctl_ws_event *event);

#endif
