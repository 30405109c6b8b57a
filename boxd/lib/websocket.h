/* websocket.h: RFC 6455 framing, with no I/O: the handshake's accept key,
 * frame heads parsed and written, payloads masked, and fragmented messages
 * put back together within a limit. boxd's sessions (http/ws-conn.c) and
 * boxctl's terminal client (ctl/ctl-terminal.c) both build on it, so the
 * rules live in one place and the fuzzer (tests/fuzz/fuzz-websocket.c)
 * exercises exactly what both sides run. */
#ifndef BOXD_WEBSOCKET_H
#define BOXD_WEBSOCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ws_opcode {
	WS_CONTINUATION = 0x0,
	WS_TEXT = 0x1,
	WS_BINARY = 0x2,
	WS_CLOSE = 0x8,
	WS_PING = 0x9,
	WS_PONG = 0xA,
};

/* Close codes (RFC 6455 7.4.1) boxd sends. */
enum ws_close_code {
	WS_CLOSE_NORMAL = 1000,
	WS_CLOSE_GOING_AWAY = 1001,
	WS_CLOSE_PROTOCOL = 1002,
	WS_CLOSE_UNSUPPORTED = 1003,
	WS_CLOSE_NO_STATUS = 1005, /* never sent: a close frame without a code */
	WS_CLOSE_INVALID_DATA = 1007,
	WS_CLOSE_POLICY = 1008,
	WS_CLOSE_TOO_BIG = 1009,
	WS_CLOSE_INTERNAL = 1011,
};

/* A frame head is at most this long (2 + 8 length + 4 mask). */
#define WS_HEAD_MAX 14
/* Control frames carry at most this much (RFC 6455 5.5). */
#define WS_CONTROL_MAX 125

/* Sec-WebSocket-Accept for a client's Sec-WebSocket-Key: base64 of the
 * SHA-1 of the key and the RFC's GUID. `out` takes 28 characters and a NUL.
 * False when the key is not 16 bytes in base64 (24 characters). */
bool ws_accept_key(const char *key, char out[29]);

/* A frame's head as parsed. */
struct ws_head {
	bool fin;
	enum ws_opcode opcode;
	bool masked;
	uint8_t mask[4];
	uint64_t length;    /* the payload's */
	size_t head_length; /* bytes of the head itself */
};

/* Parses the head at `data`. Returns its length (> 0) when whole, 0 when
 * more bytes are needed, or minus a close code when it breaks the rules:
 * reserved bits set (no extension is negotiated), an unknown opcode, a
 * control frame fragmented or over WS_CONTROL_MAX, a length not in its
 * shortest form or with the top bit set (WS_CLOSE_PROTOCOL); a client's
 * frame unmasked or a server's masked (`from_client` says which side sent
 * it: WS_CLOSE_PROTOCOL); a data frame's payload over `max_payload`
 * (WS_CLOSE_TOO_BIG; a control frame's limit is WS_CONTROL_MAX, so a ping
 * may come between fragments however full the message is). What the first
 * two bytes break is refused from them alone. */
int ws_parse_head(const uint8_t *data, size_t length, bool from_client, uint64_t max_payload,
		  struct ws_head *head);

/* Writes a frame head into `out`; `mask` NULL for a server's frame, else
 * the 4-byte key of a client's. Returns its length. */
size_t ws_write_head(uint8_t out[WS_HEAD_MAX], enum ws_opcode opcode, bool fin, uint64_t length,
		     const uint8_t *mask);

/* XORs `length` bytes with the key, the first being byte `offset` of the
 * payload (so a payload can be unmasked in pieces). */
void ws_mask(uint8_t *data, size_t length, const uint8_t mask[4], uint64_t offset);

/* Puts a message back together from its frames (data frames only: control
 * frames are the caller's, and may come between fragments). */
struct ws_message {
	enum ws_opcode opcode; /* WS_TEXT or WS_BINARY once started; 0 between messages */
	uint8_t *data;
	size_t length, capacity;
	size_t max; /* a message over this is refused */
};
void ws_message_init(struct ws_message *message, size_t max);
/* Adds a data frame's (unmasked) payload. Returns 1 when `fin` completed
 * the message (data and length are it, until ws_message_reset), 0 when
 * more fragments are to come, or minus a close code: a continuation with
 * no message started or a new message inside one (WS_CLOSE_PROTOCOL), the
 * whole over `max` (WS_CLOSE_TOO_BIG), a text message that is not UTF-8
 * (WS_CLOSE_INVALID_DATA, checked when it completes). */
int ws_message_add(struct ws_message *message, enum ws_opcode opcode, bool fin,
		   const uint8_t *payload, size_t length);
/* Ready for the next message (keeps the buffer, unless it grew over 64 KiB). */
void ws_message_reset(struct ws_message *message);
void ws_message_free(struct ws_message *message);

/* A close frame's payload: the code (big-endian) and a UTF-8 reason, cut
 * to fit WS_CONTROL_MAX at a character boundary. Returns its length. */
size_t ws_close_payload(uint8_t out[WS_CONTROL_MAX], uint16_t code, const char *reason);
/* Reads a received close payload: its code (WS_CLOSE_NO_STATUS when empty).
 * False when it is malformed (1 byte, a code that may not be sent, a reason
 * that is not UTF-8). */
bool ws_close_parse(const uint8_t *payload, size_t length, uint16_t *code);

#endif
