/* fuzz-websocket.c: libFuzzer harness for the WebSocket codec, run as a
 * session runs it: the input (after a first byte of settings) is a stream
 * of frames whose heads are parsed, whose payloads are unmasked in pieces
 * and put back together into messages, control frames read as a session
 * reads them, until the stream ends or breaks a rule. Checks that a parsed
 * head is written back to the same bytes (the shortest form is the only
 * one taken), nothing is read past what was given, a message never passes
 * its limit, a whole text message is UTF-8, and a close code read is one
 * that may be sent. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "websocket.h"

#define MESSAGE_MAX 4096

static void check_head(const uint8_t *data, size_t size, int result, const struct ws_head *head,
		       bool from_client, uint64_t max)
{
	if (result <= 0)
		return;
	if ((size_t)result > size || (size_t)result > WS_HEAD_MAX ||
	    (size_t)result != head->head_length || head->masked != from_client)
		abort();
	bool control = head->opcode & 0x8;
	if (control && (!head->fin || head->length > WS_CONTROL_MAX))
		abort();
	if (!control && head->length > max)
		abort();
	uint8_t out[WS_HEAD_MAX];
	size_t written = ws_write_head(out, head->opcode, head->fin, head->length,
				       head->masked ? head->mask : NULL);
	if (written != (size_t)result || memcmp(out, data, written) != 0)
		abort();
}

/* A control frame's payload, as a session takes it. */
static void control_frame(const struct ws_head *head, const uint8_t *payload)
{
	uint8_t copy[WS_CONTROL_MAX];
	size_t length = (size_t)head->length;
	memcpy(copy, payload, length);
	if (head->masked)
		ws_mask(copy, length, head->mask, 0);
	if (head->opcode != WS_CLOSE)
		return;
	uint16_t code = 0;
	if (!ws_close_parse(copy, length, &code))
		return;
	if (length == 0 ? code != WS_CLOSE_NO_STATUS
			: !((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
			    (code >= 3000 && code <= 4999)))
		abort();
	if (!utf8_valid((const char *)copy + (length ? 2 : 0), length ? length - 2 : 0))
		abort();
	/* Echoed as a session echoes it. */
	uint8_t echo[WS_CONTROL_MAX];
	char reason[WS_CONTROL_MAX + 1] = "";
	if (length > 2)
		memcpy(reason, copy + 2, length - 2);
	reason[length > 2 ? length - 2 : 0] = '\0';
	size_t echoed = ws_close_payload(echo, code, reason);
	uint16_t again = 0;
	if (echoed > WS_CONTROL_MAX || !ws_close_parse(echo, echoed, &again) || again != code)
		abort();
}

/* A data frame's payload, unmasked in pieces of `step` bytes into the
 * message. Returns the codec's answer for the last piece. */
static int data_frame(struct ws_message *message, const struct ws_head *head,
		      const uint8_t *payload, size_t step)
{
	size_t length = (size_t)head->length;
	uint8_t *copy = malloc(length + 1);
	memcpy(copy, payload, length);
	uint8_t *whole = malloc(length + 1);
	memcpy(whole, payload, length);
	if (head->masked)
		ws_mask(whole, length, head->mask, 0);
	size_t at = 0;
	int result = 0;
	do {
		size_t piece = length - at < step ? length - at : step;
		if (head->masked)
			ws_mask(copy + at, piece, head->mask, at);
		bool last = at + piece == length;
		result = ws_message_add(message, at ? WS_CONTINUATION : head->opcode,
					last && head->fin, copy + at, piece);
		at += piece;
	} while (result == 0 && at < length);
	if (memcmp(copy, whole, at) != 0)
		abort(); /* unmasking in pieces is unmasking whole */
	free(copy);
	free(whole);
	if (message->length > message->max)
		abort();
	return result;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	bool from_client = !(data[0] & 1);
	size_t step = (size_t)(data[0] >> 1) + 1;
	data++;
	size--;
	char accept[29];
	if (size >= 24) {
		char key[25];
		memcpy(key, data, 24);
		key[24] = '\0';
		if (ws_accept_key(key, accept) && strlen(accept) != 28)
			abort();
	}
	struct ws_message message;
	ws_message_init(&message, MESSAGE_MAX);
	size_t at = 0;
	for (;;) {
		struct ws_head head;
		uint64_t room = MESSAGE_MAX - message.length;
		int result = ws_parse_head(data + at, size - at, from_client, room, &head);
		check_head(data + at, size - at, result, &head, from_client, room);
		if (result <= 0)
			break;
		if (head.length > size - at - (size_t)result)
			break; /* the payload is not all here: a session would wait */
		const uint8_t *payload = data + at + (size_t)result;
		at += (size_t)result + (size_t)head.length;
		if (head.opcode & 0x8) {
			control_frame(&head, payload);
			continue;
		}
		int added = data_frame(&message, &head, payload, step);
		if (added < 0)
			break;
		if (added == 1) {
			if (message.opcode == WS_TEXT &&
			    !utf8_valid((const char *)message.data, message.length))
				abort();
			ws_message_reset(&message);
		}
	}
	if (at > size)
		abort();
	ws_message_free(&message);
	return 0;
}
