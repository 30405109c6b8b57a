/* ctl-ws.c: a WebSocket client over boxctl's connection (ctl-ws.h). */
#include "ctl-ws.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl.h"
#include "xalloc.h"

/* Output arrives in frames of the shim's reads; a message far larger than
 * any of them means something is wrong, not that a bigger buffer helps. */
#define MESSAGE_MAX (16u << 20)
#define READ_SIZE 65536

static bool random_bytes(void *out, size_t length)
{
	return getrandom(out, length, 0) == (ssize_t)length;
}

/* Sec-WebSocket-Key: 16 random bytes in base64 (RFC 6455 4.1). */
static bool make_key(char key[25])
{
	unsigned char nonce[16];
	if (!random_bytes(nonce, sizeof nonce))
		return false;
	EVP_EncodeBlock((unsigned char *)key, nonce, sizeof nonce);
	return true;
}

static bool accept_matches(const struct client_response *response, const char *key)
{
	char expected[29];
	const char *upgrade = client_response_header(response, "Upgrade");
	const char *accept = client_response_header(response, "Sec-WebSocket-Accept");
	return upgrade && !strcasecmp(upgrade, "websocket") && accept &&
	       ws_accept_key(key, expected) && !strcmp(accept, expected);
}

int ctl_ws_open(struct ctl_ws *ws, struct client *client, const char *path,
		struct client_response *refused)
{
	memset(ws, 0, sizeof *ws);
	memset(refused, 0, sizeof *refused);
	ws->fd = -1;
	char key[25], headers[256], error[512];
	if (!make_key(key)) {
		fprintf(stderr, "boxctl: no random bytes for the WebSocket key: %s\n",
			strerror(errno));
		return CTL_API_ERROR;
	}
	snprintf(headers, sizeof headers,
		 "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
		 "Sec-WebSocket-Version: 13\r\n",
		 key);
	struct client_response response;
	if (!client_upgrade(client, path, headers, &response, error, sizeof error)) {
		fprintf(stderr, "boxctl: %s\n", error);
		return CTL_API_ERROR;
	}
	if (response.status != 101) {
		*refused = response;
		return CTL_API_ERROR;
	}
	int status = CTL_OK;
	if (!accept_matches(&response, key)) {
		fprintf(stderr, "boxctl: boxd's WebSocket handshake answer is not RFC 6455's\n");
		status = CTL_API_ERROR;
	}
	client_response_free(&response);
	if (status != CTL_OK)
		return status;
	ws->fd = client_fd(client);
	ws->in_capacity = READ_SIZE;
	ws->in = xmalloc(ws->in_capacity);
	ws->in_length = client_take_buffered(client, ws->in, ws->in_capacity);
	ws_message_init(&ws->message, MESSAGE_MAX);
	return CTL_OK;
}

void ctl_ws_free(struct ctl_ws *ws)
{
	free(ws->in);
	ws->in = NULL;
	ws_message_free(&ws->message);
}

static bool send_all(int fd, const uint8_t *data, size_t length)
{
	while (length) {
		ssize_t n = send(fd, data, length, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		data += n;
		length -= (size_t)n;
	}
	return true;
}

bool ctl_ws_send(struct ctl_ws *ws, enum ws_opcode opcode, const void *data, size_t length)
{
	uint8_t mask[4];
	if (!random_bytes(mask, sizeof mask))
		return false;
	/* Head and masked payload in one buffer: one send, one segment. */
	uint8_t *frame = xmalloc(WS_HEAD_MAX + length);
	size_t head = ws_write_head(frame, opcode, true, length, mask);
	if (length)
		memcpy(frame + head, data, length);
	ws_mask(frame + head, length, mask, 0);
	bool ok = send_all(ws->fd, frame, head + length);
	free(frame);
	return ok;
}

bool ctl_ws_send_close(struct ctl_ws *ws, uint16_t code)
{
	uint8_t payload[WS_CONTROL_MAX];
	size_t length = ws_close_payload(payload, code, "");
	return ctl_ws_send(ws, WS_CLOSE, payload, length);
}

bool ctl_ws_receive(struct ctl_ws *ws)
{
	if (ws->in_capacity - ws->in_length < READ_SIZE) {
		ws->in_capacity = ws->in_length + READ_SIZE;
		ws->in = xrealloc(ws->in, ws->in_capacity);
	}
	for (;;) {
		ssize_t n = read(ws->fd, ws->in + ws->in_length, ws->in_capacity - ws->in_length);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		ws->in_length += (size_t)n;
		return true;
	}
}

/* Drops `length` parsed bytes from the front of what was received. */
static void consume(struct ctl_ws *ws, size_t length)
{
	memmove(ws->in, ws->in + length, ws->in_length - length);
	ws->in_length -= length;
}

int ctl_ws_next(struct ctl_ws *ws, struct ctl_ws_event *event)
{
	if (ws->message_done) {
		ws_message_reset(&ws->message);
		ws->message_done = false;
	}
	for (;;) {
		struct ws_head head;
		int parsed = ws_parse_head(ws->in, ws->in_length, false, MESSAGE_MAX, &head);
		if (parsed <= 0)
			return parsed;
		if (ws->in_length - head.head_length < head.length)
			return 0;
		const uint8_t *payload = ws->in + head.head_length;
		size_t length = (size_t)head.length;
		if (head.opcode >= WS_CLOSE) {
			memcpy(ws->control, payload, length);
			consume(ws, head.head_length + length);
			*event = (struct ctl_ws_event){head.opcode, ws->control, length};
			return 1;
		}
		int added = ws_message_add(&ws->message, head.opcode, head.fin, payload, length);
		consume(ws, head.head_length + length);
		if (added < 0)
			return added;
		if (added == 1) {
			ws->message_done = true;
			*event = (struct ctl_ws_event){ws->message.opcode, ws->message.data,
						       ws->message.length};
			return 1;
		}
	}
}
