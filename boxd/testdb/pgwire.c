/* pgwire.c: log in and run statements over PostgreSQL's protocol (pgwire.h).
 * Authentication as RFC 5802 and 7677 (SCRAM-SHA-256, no channel binding)
 * and PostgreSQL's md5; the hashes are OpenSSL's. */
#include "pgwire.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base64.h"
#include "manifest.h"
#include "random-id.h"
#include "wire.h"
#include "xalloc.h"

/* No message psbx-testdb waits for is anywhere near this. */
#define MESSAGE_LIMIT (1u << 20)
/* PostgreSQL's default is 4096; a server asking for far more would keep
 * psbx-testdb hashing for minutes. */
#define SCRAM_ITERATIONS_LIMIT 1000000

#define AUTH_OK 0
#define AUTH_CLEARTEXT 3
#define AUTH_MD5 5
#define AUTH_SASL 10
#define AUTH_SASL_CONTINUE 11
#define AUTH_SASL_FINAL 12

struct message {
	char type;
	uint8_t *body;
	size_t length;
};

struct session {
	int fd;
	const char *user, *password;
	char *error;
	size_t size;
	/* SCRAM's state between its two steps. */
	char client_first_bare[64];
	uint8_t server_signature[SHA256_DIGEST_LENGTH];
};

static uint32_t get_u32(const uint8_t *at)
{
	return (uint32_t)at[0] << 24 | (uint32_t)at[1] << 16 | (uint32_t)at[2] << 8 | at[3];
}

static void put_u32(uint8_t *at, uint32_t value)
{
	at[0] = (uint8_t)(value >> 24);
	at[1] = (uint8_t)(value >> 16);
	at[2] = (uint8_t)(value >> 8);
	at[3] = (uint8_t)value;
}

/* Sends a message: its type (none for the startup message), its length,
 * then `body`. */
static bool send_message(struct session *s, char type, const void *body, size_t length)
{
	uint8_t *frame = xmalloc(length + 5);
	size_t at = 0;
	if (type)
		frame[at++] = (uint8_t)type;
	put_u32(frame + at, (uint32_t)(length + 4));
	memcpy(frame + at + 4, body, length);
	bool sent = wire_write(s->fd, frame, at + 4 + length, s->error, s->size);
	free(frame);
	return sent;
}

/* The next message, or false with why in `error`. */
static bool read_message(struct session *s, struct message *m, char *error, size_t size)
{
	uint8_t head[5];
	if (!wire_read(s->fd, head, sizeof head, error, size))
		return false;
	uint32_t length = get_u32(head + 1);
	if (length < 4 || length > MESSAGE_LIMIT) {
		snprintf(error, size, "a PostgreSQL message of %u bytes: not a server", length);
		return false;
	}
	m->type = (char)head[0];
	m->length = length - 4;
	m->body = xmalloc(m->length + 1);
	m->body[m->length] = 0;
	if (!wire_read(s->fd, m->body, m->length, error, size)) {
		free(m->body);
		return false;
	}
	return true;
}

/* An ErrorResponse's human message (its 'M' field) into the error. */
static void take_error(struct session *s, const struct message *m)
{
	snprintf(s->error, s->size, "the server refused");
	for (size_t i = 0; i < m->length && m->body[i];) {
		const char *field = (const char *)m->body + i + 1;
		size_t field_length = strnlen(field, m->length - i - 1);
		if (m->body[i] == 'M') {
			snprintf(s->error, s->size, "%.*s", (int)field_length, field);
			return;
		}
		i += field_length + 2;
	}
}

static void hmac_sha256(const uint8_t *key, size_t key_length, const void *data, size_t length,
			uint8_t out[SHA256_DIGEST_LENGTH])
{
	unsigned int out_length = SHA256_DIGEST_LENGTH;
	HMAC(EVP_sha256(), key, (int)key_length, data, length, out, &out_length);
}

/* SASLInitialResponse: the mechanism, then client-first-message. */
static bool scram_begin(struct session *s, const struct message *m)
{
	bool offered = false;
	for (size_t i = 4; i < m->length && m->body[i]; i += strlen((char *)m->body + i) + 1)
		offered |= strcmp((char *)m->body + i, "SCRAM-SHA-256") == 0;
	if (!offered) {
		snprintf(s->error, s->size, "the server offers no SCRAM-SHA-256");
		return false;
	}
	char nonce[37];
	random_hex(nonce, 18);
	/* The user is in the startup message; SCRAM's own is left empty. */
	snprintf(s->client_first_bare, sizeof s->client_first_bare, "n=,r=%s", nonce);
	char *first = xasprintf("n,,%s", s->client_first_bare);
	size_t first_length = strlen(first);
	static const char mechanism[] = "SCRAM-SHA-256";
	size_t length = sizeof mechanism + 4 + first_length;
	uint8_t *body = xmalloc(length);
	memcpy(body, mechanism, sizeof mechanism);
	put_u32(body + sizeof mechanism, (uint32_t)first_length);
	memcpy(body + sizeof mechanism + 4, first, first_length);
	bool sent = send_message(s, 'p', body, length);
	free(body);
	free(first);
	return sent;
}

/* server-first-message's attribute `name` ("r", "s", "i"), or NULL. */
static char *scram_attribute(const char *message, char name)
{
	for (const char *at = message; at && *at;
	     at = strchr(at, ',') ? strchr(at, ',') + 1 : NULL) {
		if (at[0] == name && at[1] == '=') {
			const char *end = strchr(at, ',');
			return xstrndup(at + 2, end ? (size_t)(end - at - 2) : strlen(at + 2));
		}
	}
	return NULL;
}

/* SASLResponse: client-final-message with the proof; keeps the server's
 * signature the final message must carry. */
static bool scram_continue(struct session *s, const struct message *m)
{
	const char *server_first = (const char *)m->body + 4;
	char *nonce = scram_attribute(server_first, 'r');
	char *salt_text = scram_attribute(server_first, 's');
	char *iterations_text = scram_attribute(server_first, 'i');
	uint8_t salt[128];
	size_t salt_length = 0;
	int iterations = iterations_text ? atoi(iterations_text) : 0;
	const char *client_nonce = s->client_first_bare + 5;
	bool ok = nonce && salt_text && iterations > 0 && iterations <= SCRAM_ITERATIONS_LIMIT &&
		  strncmp(nonce, client_nonce, strlen(client_nonce)) == 0 &&
		  base64_decode(salt_text, strlen(salt_text), salt, sizeof salt, &salt_length);
	if (!ok) {
		snprintf(s->error, s->size, "the server's SCRAM message does not parse");
	} else {
		uint8_t salted[SHA256_DIGEST_LENGTH], client_key[SHA256_DIGEST_LENGTH],
			stored_key[SHA256_DIGEST_LENGTH], signature[SHA256_DIGEST_LENGTH],
			server_key[SHA256_DIGEST_LENGTH], proof[SHA256_DIGEST_LENGTH];
		PKCS5_PBKDF2_HMAC(s->password, (int)strlen(s->password), salt, (int)salt_length,
				  iterations, EVP_sha256(), sizeof salted, salted);
		hmac_sha256(salted, sizeof salted, "Client Key", 10, client_key);
		SHA256(client_key, sizeof client_key, stored_key);
		char *without_proof = xasprintf("c=biws,r=%s", nonce);
		char *auth_message =
			xasprintf("%s,%s,%s", s->client_first_bare, server_first, without_proof);
		hmac_sha256(stored_key, sizeof stored_key, auth_message, strlen(auth_message),
			    signature);
		for (size_t i = 0; i < sizeof proof; i++)
			proof[i] = client_key[i] ^ signature[i];
		hmac_sha256(salted, sizeof salted, "Server Key", 10, server_key);
		hmac_sha256(server_key, sizeof server_key, auth_message, strlen(auth_message),
			    s->server_signature);
		char *proof_text = base64_encode(proof, sizeof proof);
		char *final = xasprintf("%s,p=%s", without_proof, proof_text);
		ok = send_message(s, 'p', final, strlen(final));
		free(final);
		free(proof_text);
		free(auth_message);
		free(without_proof);
	}
	free(nonce);
	free(salt_text);
	free(iterations_text);
	return ok;
}

/* server-final-message: the server proves it knew the password too. */
static bool scram_final(struct session *s, const struct message *m)
{
	char *text = xstrndup((const char *)m->body + 4, m->length - 4);
	char *verifier = scram_attribute(text, 'v');
	uint8_t signature[64];
	size_t length = 0;
	bool ok = verifier &&
		  base64_decode(verifier, strlen(verifier), signature, sizeof signature, &length) &&
		  length == sizeof s->server_signature &&
		  memcmp(signature, s->server_signature, length) == 0;
	if (!ok)
		snprintf(s->error, s->size, "the server's SCRAM signature is wrong");
	free(verifier);
	free(text);
	return ok;
}

/* PostgreSQL's md5: "md5" + md5hex(md5hex(password + user) + salt). */
static bool md5_password(struct session *s, const struct message *m)
{
	if (m->length < 8) {
		snprintf(s->error, s->size, "an md5 request without its salt");
		return false;
	}
	char inner_hex[33], outer_hex[33];
	uint8_t digest[16];
	char *first = xasprintf("%s%s", s->password, s->user);
	EVP_Digest(first, strlen(first), digest, NULL, EVP_md5(), NULL);
	manifest_hex_encode(digest, sizeof digest, inner_hex);
	uint8_t second[36];
	memcpy(second, inner_hex, 32);
	memcpy(second + 32, m->body + 4, 4);
	EVP_Digest(second, sizeof second, digest, NULL, EVP_md5(), NULL);
	manifest_hex_encode(digest, sizeof digest, outer_hex);
	char *answer = xasprintf("md5%s", outer_hex);
	bool sent = send_message(s, 'p', answer, strlen(answer) + 1);
	free(answer);
	free(first);
	return sent;
}

/* One authentication request; false ends the session. */
static bool authenticate(struct session *s, const struct message *m)
{
	uint32_t code = m->length >= 4 ? get_u32(m->body) : UINT32_MAX;
	switch (code) {
	case AUTH_OK: return true;
	case AUTH_CLEARTEXT: return send_message(s, 'p', s->password, strlen(s->password) + 1);
	case AUTH_MD5: return md5_password(s, m);
	case AUTH_SASL: return scram_begin(s, m);
	case AUTH_SASL_CONTINUE: return scram_continue(s, m);
	case AUTH_SASL_FINAL: return scram_final(s, m);
	default:
		snprintf(s->error, s->size, "the server asks for authentication %u, not known here",
			 code);
		return false;
	}
}

/* Reads to ReadyForQuery, answering authentication on the way. An error
 * is kept (the first one): after login ReadyForQuery follows it, before
 * login the server hangs up; false either way. */
static bool until_ready(struct session *s)
{
	bool failed = false;
	for (;;) {
		struct message m;
		char lost[128];
		if (!read_message(s, &m, failed ? lost : s->error, failed ? sizeof lost : s->size))
			return false;
		char type = m.type;
		bool go_on = true;
		if (type == 'E' && !failed) {
			take_error(s, &m);
			failed = true;
		} else if (type == 'R' && !failed) {
			go_on = authenticate(s, &m);
		}
		free(m.body);
		if (type == 'Z')
			return !failed;
		if (!go_on)
			return false;
	}
}

/* Connects and sends the StartupMessage for `user`/`database`. */
static bool start(struct session *s, const char *host_port, const char *database, int timeout_ms)
{
	s->fd = wire_connect(host_port, timeout_ms, s->error, s->size);
	if (s->fd < 0)
		return false;
	/* Int32 protocol 3.0, then name/value pairs and a NUL (the length
	 * goes first, from send_message). */
	uint8_t startup[512];
	int body = snprintf((char *)startup + 4, sizeof startup - 5, "user%c%s%cdatabase%c%s%c", 0,
			    s->user, 0, 0, database, 0);
	if (body <= 0 || (size_t)body >= sizeof startup - 5) {
		snprintf(s->error, s->size, "a user or database name too long");
		return false;
	}
	size_t length = 4 + (size_t)body + 1;
	startup[length - 1] = 0;
	put_u32(startup, 196608);
	return send_message(s, 0, startup, length);
}

bool pgwire_answers(const char *host_port, const char *user, const char *database, char *detail,
		    size_t size)
{
	struct session s = {.user = user, .error = detail, .size = size, .fd = -1};
	bool ready = false;
	struct message m;
	if (start(&s, host_port, database, WIRE_PROBE_TIMEOUT_MS) &&
	    read_message(&s, &m, detail, size)) {
		ready = m.type == 'R';
		if (m.type == 'E')
			take_error(&s, &m);
		else if (!ready)
			snprintf(detail, size, "not a PostgreSQL answer (0x%02x)", (uint8_t)m.type);
		free(m.body);
	}
	if (s.fd >= 0)
		close(s.fd);
	return ready;
}

bool pgwire_run(const char *host_port, const char *user, const char *password, const char *database,
		const char *const statements[], char *error, size_t size)
{
	struct session s = {
		.user = user, .password = password, .error = error, .size = size, .fd = -1};
	bool ok = start(&s, host_port, database, WIRE_STATEMENT_TIMEOUT_MS) && until_ready(&s);
	for (const char *const *statement = statements; ok && *statement; statement++)
		ok = send_message(&s, 'Q', *statement, strlen(*statement) + 1) && until_ready(&s);
	static const uint8_t terminate[] = {'X', 0, 0, 0, 4};
	if (ok)
		wire_write(s.fd, terminate, sizeof terminate, error, size);
	if (s.fd >= 0)
		close(s.fd);
	return ok;
}
