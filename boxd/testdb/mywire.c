/* mywire.c: log in and run statements over MySQL's protocol (mywire.h). */
#include "mywire.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire.h"
#include "xalloc.h"

#define PACKET_LIMIT (1u << 20)
#define SCRAMBLE_LENGTH 20
#define NATIVE "mysql_native_password"

/* CLIENT_LONG_PASSWORD | CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS |
 * CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH */
#define CLIENT_FLAGS (0x1u | 0x200u | 0x2000u | 0x8000u | 0x80000u)
#define CHARSET_UTF8MB4 45

struct packet {
	uint8_t sequence;
	uint8_t *payload;
	size_t length;
};

static bool read_packet(int fd, struct packet *p, char *error, size_t size)
{
	uint8_t head[4];
	if (!wire_read(fd, head, sizeof head, error, size))
		return false;
	p->length = (size_t)head[0] | (size_t)head[1] << 8 | (size_t)head[2] << 16;
	p->sequence = head[3];
	if (p->length == 0 || p->length > PACKET_LIMIT) {
		snprintf(error, size, "a MySQL packet of %zu bytes: not a server", p->length);
		return false;
	}
	p->payload = xmalloc(p->length + 1);
	p->payload[p->length] = 0;
	if (!wire_read(fd, p->payload, p->length, error, size)) {
		free(p->payload);
		return false;
	}
	return true;
}

static bool send_packet(int fd, uint8_t sequence, const void *payload, size_t length, char *error,
			size_t size)
{
	uint8_t *frame = xmalloc(length + 4);
	frame[0] = (uint8_t)length;
	frame[1] = (uint8_t)(length >> 8);
	frame[2] = (uint8_t)(length >> 16);
	frame[3] = sequence;
	memcpy(frame + 4, payload, length);
	bool sent = wire_write(fd, frame, length + 4, error, size);
	free(frame);
	return sent;
}

/* An ERR packet's message: 0xff, a code, '#' and a state, the text. */
static void take_error(const struct packet *p, char *error, size_t size)
{
	size_t at = p->length > 3 && p->payload[3] == '#' ? 9 : 3;
	snprintf(error, size, "%.*s", (int)(p->length > at ? p->length - at : 0),
		 (const char *)p->payload + (p->length > at ? at : 0));
}

/* SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))). */
static void native_token(const char *password, const uint8_t scramble[SCRAMBLE_LENGTH],
			 uint8_t token[20])
{
	uint8_t once[20], twice[20], mixed[20], joined[SCRAMBLE_LENGTH + 20];
	EVP_Digest(password, strlen(password), once, NULL, EVP_sha1(), NULL);
	EVP_Digest(once, sizeof once, twice, NULL, EVP_sha1(), NULL);
	memcpy(joined, scramble, SCRAMBLE_LENGTH);
	memcpy(joined + SCRAMBLE_LENGTH, twice, sizeof twice);
	EVP_Digest(joined, sizeof joined, mixed, NULL, EVP_sha1(), NULL);
	for (int i = 0; i < 20; i++)
		token[i] = once[i] ^ mixed[i];
}

/* The 20 bytes of scramble from the server's handshake (protocol 10). */
static bool handshake_scramble(const struct packet *p, uint8_t scramble[SCRAMBLE_LENGTH],
			       char *error, size_t size)
{
	if (p->payload[0] != 10) {
		if (p->payload[0] == 0xff)
			take_error(p, error, size);
		else
			snprintf(error, size, "not a MySQL handshake");
		return false;
	}
	size_t at = 1 + strnlen((const char *)p->payload + 1, p->length - 1) + 1 + 4;
	/* part 1 (8), filler, capabilities, charset, status, capabilities,
	 * the data's length, 10 reserved, then part 2 (12 and a NUL). */
	if (at + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10 + 12 > p->length) {
		snprintf(error, size, "a MySQL handshake too short to log in with");
		return false;
	}
	memcpy(scramble, p->payload + at, 8);
	memcpy(scramble + 8, p->payload + at + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10, 12);
	return true;
}

/* HandshakeResponse41 with a native token for `scramble`. */
static bool send_login(int fd, const char *user, const char *password,
		       const uint8_t scramble[SCRAMBLE_LENGTH], char *error, size_t size)
{
	size_t user_length = strlen(user);
	size_t length = 4 + 4 + 1 + 23 + user_length + 1 + 1 + 20 + sizeof NATIVE;
	uint8_t *payload = xcalloc(1, length);
	uint32_t flags = CLIENT_FLAGS, max_packet = PACKET_LIMIT;
	for (int i = 0; i < 4; i++) {
		payload[i] = (uint8_t)(flags >> (8 * i));
		payload[4 + i] = (uint8_t)(max_packet >> (8 * i));
	}
	payload[8] = CHARSET_UTF8MB4;
	size_t at = 32;
	memcpy(payload + at, user, user_length + 1);
	at += user_length + 1;
	payload[at++] = 20;
	native_token(password, scramble, payload + at);
	at += 20;
	memcpy(payload + at, NATIVE, sizeof NATIVE);
	bool sent = send_packet(fd, 1, payload, length, error, size);
	free(payload);
	return sent;
}

/* After the login: OK, ERR, or a switch to another method (which is
 * answered when it is the native one again, with its new scramble). */
static enum mywire_outcome login_result(int fd, const char *password, char *error, size_t size)
{
	for (int round = 0; round < 2; round++) {
		struct packet p;
		if (!read_packet(fd, &p, error, size))
			return MYWIRE_FAILED;
		enum mywire_outcome outcome = MYWIRE_FAILED;
		bool again = false;
		if (p.payload[0] == 0x00) {
			outcome = MYWIRE_DONE;
		} else if (p.payload[0] == 0xff) {
			take_error(&p, error, size);
		} else if (p.payload[0] == 0xfe && round == 0) {
			const char *method = (const char *)p.payload + 1;
			size_t method_length = strnlen(method, p.length - 1);
			size_t data_at = 1 + method_length + 1;
			if (strcmp(method, NATIVE) == 0 && data_at + SCRAMBLE_LENGTH <= p.length) {
				uint8_t token[20];
				native_token(password, p.payload + data_at, token);
				again = send_packet(fd, (uint8_t)(p.sequence + 1), token,
						    sizeof token, error, size);
			} else {
				snprintf(error, size, "%.*s", (int)method_length, method);
				outcome = MYWIRE_OTHER_METHOD;
			}
		} else {
			snprintf(error, size, "an answer to a login not known here (0x%02x)",
				 p.payload[0]);
		}
		free(p.payload);
		if (!again)
			return outcome;
	}
	snprintf(error, size, "the server asked to switch methods twice");
	return MYWIRE_FAILED;
}

/* COM_QUERY, then its OK or ERR. */
static bool query(int fd, const char *statement, char *error, size_t size)
{
	size_t length = strlen(statement);
	uint8_t *payload = xmalloc(length + 1);
	payload[0] = 0x03;
	memcpy(payload + 1, statement, length);
	bool sent = send_packet(fd, 0, payload, length + 1, error, size);
	free(payload);
	struct packet p;
	if (!sent || !read_packet(fd, &p, error, size))
		return false;
	bool ok = p.payload[0] == 0x00;
	if (!ok && p.payload[0] == 0xff)
		take_error(&p, error, size);
	else if (!ok)
		snprintf(error, size, "a statement answered with rows: %s", statement);
	free(p.payload);
	return ok;
}

enum mywire_outcome mywire_run(const char *host_port, const char *user, const char *password,
			       const char *const statements[], char *error, size_t size)
{
	int fd = wire_connect(host_port, WIRE_STATEMENT_TIMEOUT_MS, error, size);
	if (fd < 0)
		return MYWIRE_FAILED;
	struct packet hello;
	uint8_t scramble[SCRAMBLE_LENGTH];
	enum mywire_outcome outcome = MYWIRE_FAILED;
	if (read_packet(fd, &hello, error, size)) {
		if (handshake_scramble(&hello, scramble, error, size) &&
		    send_login(fd, user, password, scramble, error, size))
			outcome = login_result(fd, password, error, size);
		free(hello.payload);
	}
	for (const char *const *statement = statements; outcome == MYWIRE_DONE && *statement;
	     statement++)
		if (!query(fd, *statement, error, size))
			outcome = MYWIRE_FAILED;
	if (outcome == MYWIRE_DONE) {
		static const uint8_t quit = 0x01;
		send_packet(fd, 0, &quit, 1, error, size);
	}
	close(fd);
	return outcome;
}

bool mywire_answers(const char *host_port, char *detail, size_t size)
{
	int fd = wire_connect(host_port, WIRE_PROBE_TIMEOUT_MS, detail, size);
	if (fd < 0)
		return false;
	struct packet hello;
	bool ready = false;
	if (read_packet(fd, &hello, detail, size)) {
		ready = hello.payload[0] == 10;
		if (hello.payload[0] == 0xff)
			take_error(&hello, detail, size);
		else if (!ready)
			snprintf(detail, size, "not a MySQL handshake (0x%02x)", hello.payload[0]);
		free(hello.payload);
	}
	close(fd);
	return ready;
}
