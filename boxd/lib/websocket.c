/* websocket.c: RFC 6455 framing, with no I/O (websocket.h). Every check a
 * peer's bytes meet is here, so the server's sessions, boxctl's client and
 * the fuzzer all run the same rules. */
#include "websocket.h"

#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "sha1.h"
#include "utf8.h"
#include "xalloc.h"

/* RFC 6455 1.3: what every server appends to the client's key. */
static const char GUID[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/* A message buffer bigger than this is let go between messages, so an idle
 * session holds little whatever it once received. */
#define KEEP_CAPACITY (64u << 10)
#define FIRST_CAPACITY 256u

bool ws_accept_key(const char *key, char out[29])
{
	/* The key is 16 random bytes in base64: 24 characters with padding. */
	unsigned char nonce[18];
	size_t nonce_length = 0;
	if (!key || strlen(key) != 24 ||
	    !base64_decode(key, 24, nonce, sizeof nonce, &nonce_length) || nonce_length != 16)
		return false;
	char joined[24 + sizeof GUID];
	memcpy(joined, key, 24);
	memcpy(joined + 24, GUID, sizeof GUID);
	uint8_t digest[SHA1_DIGEST_SIZE];
	sha1_digest(joined, 24 + sizeof GUID - 1, digest);
	/* 20 bytes are 28 characters of base64. */
	char *text = base64_encode(digest, sizeof digest);
	bool ok = strlen(text) == 28;
	if (ok)
		memcpy(out, text, 29);
	free(text);
	return ok;
}

/* ---- heads ---- */

static bool known_opcode(unsigned opcode)
{
	return opcode == WS_CONTINUATION || opcode == WS_TEXT || opcode == WS_BINARY ||
	       opcode == WS_CLOSE || opcode == WS_PING || opcode == WS_PONG;
}

static bool is_control(unsigned opcode)
{
	return opcode & 0x8;
}

/* What the first two bytes alone break, checked before the rest arrives:
 * 0 when nothing. */
static int first_bytes_error(uint8_t first, uint8_t second, bool from_client)
{
	unsigned opcode = first & 0x0f;
	bool fin = first & 0x80, masked = second & 0x80;
	unsigned length7 = second & 0x7f;
	/* No extension is negotiated, so no reserved bit has a meaning. */
	if (first & 0x70 || !known_opcode(opcode))
		return WS_CLOSE_PROTOCOL;
	/* A client masks every frame, a server none (RFC 6455 5.1). */
	if (masked != from_client)
		return WS_CLOSE_PROTOCOL;
	if (is_control(opcode) && (!fin || length7 > WS_CONTROL_MAX))
		return WS_CLOSE_PROTOCOL;
	return 0;
}

int ws_parse_head(const uint8_t *data, size_t length, bool from_client, uint64_t max_payload,
		  struct ws_head *head)
{
	if (length < 2)
		return 0;
	int error = first_bytes_error(data[0], data[1], from_client);
	if (error)
		return -error;
	unsigned length7 = data[1] & 0x7f;
	size_t extra = length7 == 126 ? 2 : length7 == 127 ? 8 : 0;
	bool masked = data[1] & 0x80;
	size_t need = 2 + extra + (masked ? 4 : 0);
	if (length < need)
		return 0;
	uint64_t payload = length7;
	if (extra) {
		payload = 0;
		for (size_t i = 0; i < extra; i++)
			payload = payload << 8 | data[2 + i];
		/* The shortest form only, and a 64-bit length's top bit clear (5.2). */
		if ((extra == 2 && payload < 126) ||
		    (extra == 8 && (payload <= 0xffff || payload >> 63)))
			return -WS_CLOSE_PROTOCOL;
	}
	if (!is_control(data[0] & 0x0f) && payload > max_payload)
		return -WS_CLOSE_TOO_BIG;
	head->fin = data[0] & 0x80;
	head->opcode = (enum ws_opcode)(data[0] & 0x0f);
	head->masked = masked;
	memset(head->mask, 0, sizeof head->mask);
	if (masked)
		memcpy(head->mask, data + 2 + extra, 4);
	head->length = payload;
	head->head_length = need;
	return (int)need;
}

size_t ws_write_head(uint8_t out[WS_HEAD_MAX], enum ws_opcode opcode, bool fin, uint64_t length,
		     const uint8_t *mask)
{
	size_t at = 0;
	out[at++] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0f));
	uint8_t mask_bit = mask ? 0x80 : 0;
	if (length < 126) {
		out[at++] = (uint8_t)(mask_bit | length);
	} else if (length <= 0xffff) {
		out[at++] = mask_bit | 126;
		out[at++] = (uint8_t)(length >> 8);
		out[at++] = (uint8_t)length;
	} else {
		out[at++] = mask_bit | 127;
		for (int shift = 56; shift >= 0; shift -= 8)
			out[at++] = (uint8_t)(length >> shift);
	}
	if (mask) {
		memcpy(out + at, mask, 4);
		at += 4;
	}
	return at;
}

void ws_mask(uint8_t *data, size_t length, const uint8_t mask[4], uint64_t offset)
{
	for (size_t i = 0; i < length; i++)
		data[i] ^= mask[(offset + i) & 3];
}

/* ---- messages ---- */

void ws_message_init(struct ws_message *message, size_t max)
{
	memset(message, 0, sizeof *message);
	message->max = max;
}

/* Room for `more` bytes, growing by doubling up to the limit. */
static void reserve(struct ws_message *message, size_t more)
{
	size_t want = message->length + more;
	if (want <= message->capacity && message->data)
		return;
	size_t capacity = message->capacity ? message->capacity : FIRST_CAPACITY;
	while (capacity < want)
		capacity = capacity > message->max / 2 ? message->max : capacity * 2;
	if (capacity < want)
		capacity = want;
	message->data = xrealloc(message->data, capacity ? capacity : 1);
	message->capacity = capacity;
}

/* Whether a frame of `opcode` may come now: a continuation only inside a
 * message, a new message only between them. */
static int sequence_error(const struct ws_message *message, enum ws_opcode opcode)
{
	if (opcode == WS_CONTINUATION)
		return message->opcode == 0 ? WS_CLOSE_PROTOCOL : 0;
	if (opcode == WS_TEXT || opcode == WS_BINARY)
		return message->opcode != 0 ? WS_CLOSE_PROTOCOL : 0;
	return WS_CLOSE_PROTOCOL; /* a control frame is not part of a message */
}

int ws_message_add(struct ws_message *message, enum ws_opcode opcode, bool fin,
		   const uint8_t *payload, size_t length)
{
	int error = sequence_error(message, opcode);
	if (error)
		return -error;
	if (length > message->max - message->length)
		return -WS_CLOSE_TOO_BIG;
	if (opcode != WS_CONTINUATION)
		message->opcode = opcode;
	reserve(message, length);
	if (length)
		memcpy(message->data + message->length, payload, length);
	message->length += length;
	if (!fin)
		return 0;
	/* Checked whole, once: a character may be split across frames. */
	if (message->opcode == WS_TEXT && !utf8_valid((const char *)message->data, message->length))
		return -WS_CLOSE_INVALID_DATA;
	return 1;
}

void ws_message_reset(struct ws_message *message)
{
	message->opcode = 0;
	message->length = 0;
	if (message->capacity > KEEP_CAPACITY) {
		free(message->data);
		message->data = NULL;
		message->capacity = 0;
	}
}

void ws_message_free(struct ws_message *message)
{
	free(message->data);
	ws_message_init(message, message->max);
}

/* ---- close frames ---- */

/* The codes a close frame may carry (RFC 6455 7.4.1, 7.4.2 and the IANA
 * registry): 1004, 1005, 1006 and 1015 are reserved for what an endpoint
 * reports locally, never sent; 3000-4999 are for libraries and
 * applications. */
static bool code_may_be_sent(uint16_t code)
{
	return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
	       (code >= 3000 && code <= 4999);
}

size_t ws_close_payload(uint8_t out[WS_CONTROL_MAX], uint16_t code, const char *reason)
{
	if (code == WS_CLOSE_NO_STATUS)
		return 0; /* "no code" is said by an empty payload */
	out[0] = (uint8_t)(code >> 8);
	out[1] = (uint8_t)code;
	size_t length = reason ? strlen(reason) : 0;
	if (length > WS_CONTROL_MAX - 2)
		length = utf8_prefix_length(reason, WS_CONTROL_MAX - 2);
	if (length)
		memcpy(out + 2, reason, length);
	return 2 + length;
}

bool ws_close_parse(const uint8_t *payload, size_t length, uint16_t *code)
{
	if (length == 0) {
		*code = WS_CLOSE_NO_STATUS;
		return true;
	}
	if (length == 1 || length > WS_CONTROL_MAX)
		return false;
	*code = (uint16_t)(payload[0] << 8 | payload[1]);
	return code_may_be_sent(*code) && utf8_valid((const char *)payload + 2, length - 2);
}
