/* test-websocket.c: the RFC 6455 codec against the RFC's own examples
 * (the accept key of 1.3, the frames of 5.7), every head it must refuse,
 * messages put back together within their limit, strict UTF-8 for text,
 * and close frames built and read by the rules of 7.4. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "websocket.h"

static const uint8_t MASK[4] = {0x37, 0xfa, 0x21, 0x3d};

static void accept_key(void)
{
	char out[29];
	CHECK(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out));
	CHECKF(strcmp(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == 0, "got %s", out);
	CHECK(!ws_accept_key("", out));
	CHECK(!ws_accept_key("dGhlIHNhbXBsZSBub25jZQ", out));     /* unpadded: 22 characters */
	CHECK(!ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==  ", out)); /* not 24 */
	CHECK(!ws_accept_key("dGhlIHNhbXBsZSBub25j!Q==", out));   /* outside the alphabet */
	CHECK(!ws_accept_key("dGhlIHNhbXBsZSBub25jZXg=", out));   /* 17 bytes */
	CHECK(!ws_accept_key(NULL, out));
}

/* Parses `bytes` whole, and checks every shorter prefix asks for more. */
static int parse_all(const uint8_t *bytes, size_t length, bool from_client, uint64_t max,
		     struct ws_head *head)
{
	int result = ws_parse_head(bytes, length, from_client, max, head);
	if (result > 0)
		for (size_t cut = 0; cut < (size_t)result; cut++)
			CHECKF(ws_parse_head(bytes, cut, from_client, max, head) == 0, "cut %zu",
			       cut);
	return ws_parse_head(bytes, length, from_client, max, head);
}

/* RFC 6455 5.7's examples. */
static void rfc_examples(void)
{
	struct ws_head head;
	/* A single-frame unmasked text message "Hello" (a server's). */
	const uint8_t unmasked[] = {0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
	CHECK(parse_all(unmasked, sizeof unmasked, false, 1000, &head) == 2);
	CHECK(head.fin && head.opcode == WS_TEXT && !head.masked && head.length == 5);
	CHECK(memcmp(unmasked + 2, "Hello", 5) == 0);
	CHECK(ws_parse_head(unmasked, sizeof unmasked, true, 1000, &head) == -WS_CLOSE_PROTOCOL);

	/* A single-frame masked text message "Hello" (a client's). */
	uint8_t masked[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
	CHECK(parse_all(masked, sizeof masked, true, 1000, &head) == 6);
	CHECK(head.masked && memcmp(head.mask, MASK, 4) == 0 && head.length == 5);
	CHECK(ws_parse_head(masked, sizeof masked, false, 1000, &head) == -WS_CLOSE_PROTOCOL);
	uint8_t payload[5];
	memcpy(payload, masked + 6, 5);
	ws_mask(payload, 5, MASK, 0);
	CHECK(memcmp(payload, "Hello", 5) == 0);
	/* Unmasked in pieces, each knowing its offset. */
	memcpy(payload, masked + 6, 5);
	ws_mask(payload, 2, MASK, 0);
	ws_mask(payload + 2, 3, MASK, 2);
	CHECK(memcmp(payload, "Hello", 5) == 0);
	/* Written back, the same bytes. */
	uint8_t out[WS_HEAD_MAX];
	CHECK(ws_write_head(out, WS_TEXT, true, 5, MASK) == 6 && memcmp(out, masked, 6) == 0);
	CHECK(ws_write_head(out, WS_TEXT, true, 5, NULL) == 2 && memcmp(out, unmasked, 2) == 0);

	/* A fragmented unmasked text message: "Hel", then "lo". */
	const uint8_t first[] = {0x01, 0x03, 0x48, 0x65, 0x6c};
	const uint8_t second[] = {0x80, 0x02, 0x6c, 0x6f};
	CHECK(parse_all(first, sizeof first, false, 1000, &head) == 2);
	CHECK(!head.fin && head.opcode == WS_TEXT && head.length == 3);
	CHECK(parse_all(second, sizeof second, false, 1000, &head) == 2);
	CHECK(head.fin && head.opcode == WS_CONTINUATION && head.length == 2);
	struct ws_message message;
	ws_message_init(&message, 100);
	CHECK(ws_message_add(&message, WS_TEXT, false, first + 2, 3) == 0);
	CHECK(ws_message_add(&message, WS_CONTINUATION, true, second + 2, 2) == 1);
	CHECK(message.opcode == WS_TEXT && message.length == 5 &&
	      memcmp(message.data, "Hello", 5) == 0);
	ws_message_free(&message);

	/* Unmasked ping and masked pong, each with "Hello". */
	const uint8_t ping[] = {0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
	CHECK(parse_all(ping, sizeof ping, false, 0, &head) == 2);
	CHECK(head.opcode == WS_PING && head.fin && head.length == 5);
	const uint8_t pong[] = {0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
	CHECK(parse_all(pong, sizeof pong, true, 0, &head) == 6);
	CHECK(head.opcode == WS_PONG && head.length == 5);

	/* 256 bytes binary, and 64 KiB, in single unmasked frames. */
	const uint8_t two_five_six[] = {0x82, 0x7e, 0x01, 0x00};
	CHECK(parse_all(two_five_six, sizeof two_five_six, false, 1 << 20, &head) == 4);
	CHECK(head.opcode == WS_BINARY && head.length == 256);
	CHECK(ws_write_head(out, WS_BINARY, true, 256, NULL) == 4 &&
	      memcmp(out, two_five_six, 4) == 0);
	const uint8_t sixty_four_k[] = {0x82, 0x7f, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00};
	CHECK(parse_all(sixty_four_k, sizeof sixty_four_k, false, 1 << 20, &head) == 10);
	CHECK(head.length == 65536);
	CHECK(ws_write_head(out, WS_BINARY, true, 65536, NULL) == 10 &&
	      memcmp(out, sixty_four_k, 10) == 0);
	CHECK(ws_write_head(out, WS_BINARY, true, 65536, MASK) == WS_HEAD_MAX);
}

/* Every length form round-trips at its edges. */
static void lengths(void)
{
	const uint64_t edges[] = {0, 1, 125, 126, 127, 65535, 65536, 1u << 20, (1ull << 63) - 1};
	for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
		for (int masked = 0; masked < 2; masked++) {
			uint8_t out[WS_HEAD_MAX];
			size_t length = ws_write_head(out, WS_BINARY, false, edges[i],
						      masked ? MASK : NULL);
			struct ws_head head;
			int result = ws_parse_head(out, length, masked, UINT64_MAX, &head);
			CHECKF(result == (int)length && head.length == edges[i] &&
				       head.masked == masked && !head.fin,
			       "length %llu masked %d: %d", (unsigned long long)edges[i], masked,
			       result);
		}
	}
}

static int parse(const uint8_t *bytes, size_t length, uint64_t max)
{
	struct ws_head head;
	return ws_parse_head(bytes, length, true, max, &head);
}

/* Every head the rules refuse (as a client's: masked). */
static void refusals(void)
{
	/* Reserved bits, each: no extension is negotiated. */
	for (uint8_t rsv = 0x10; rsv <= 0x40; rsv <<= 1) {
		const uint8_t bytes[] = {(uint8_t)(0x82 | rsv), 0x80, 1, 2, 3, 4};
		CHECKF(parse(bytes, sizeof bytes, 100) == -WS_CLOSE_PROTOCOL, "rsv %x", rsv);
	}
	/* Unknown opcodes: 3-7 and 0xB-0xF. */
	for (uint8_t opcode = 3; opcode <= 0xf; opcode++) {
		if (opcode >= 8 && opcode <= 0xa)
			continue;
		const uint8_t bytes[] = {(uint8_t)(0x80 | opcode), 0x80, 1, 2, 3, 4};
		CHECKF(parse(bytes, sizeof bytes, 100) == -WS_CLOSE_PROTOCOL, "opcode %x", opcode);
	}
	/* Control frames fragmented, or over 125 bytes. */
	const uint8_t ping_unfinished[] = {0x09, 0x80, 1, 2, 3, 4};
	CHECK(parse(ping_unfinished, sizeof ping_unfinished, 100) == -WS_CLOSE_PROTOCOL);
	const uint8_t close_unfinished[] = {0x08, 0x80, 1, 2, 3, 4};
	CHECK(parse(close_unfinished, sizeof close_unfinished, 100) == -WS_CLOSE_PROTOCOL);
	const uint8_t ping_long[] = {0x89, 0xfe, 0x00, 0x7e, 1, 2, 3, 4};
	CHECK(parse(ping_long, sizeof ping_long, 1000) == -WS_CLOSE_PROTOCOL);
	const uint8_t ping_125[] = {0x89, 0x80 | 125, 1, 2, 3, 4};
	CHECK(parse(ping_125, sizeof ping_125, 1000) == 6);
	/* Refused from the first two bytes, before the rest comes. */
	CHECK(parse(ping_long, 2, 1000) == -WS_CLOSE_PROTOCOL);
	/* Lengths not in their shortest form, and the top bit. */
	const uint8_t short_in_16[] = {0x82, 0xfe, 0x00, 0x7d, 1, 2, 3, 4};
	CHECK(parse(short_in_16, sizeof short_in_16, 1000) == -WS_CLOSE_PROTOCOL);
	const uint8_t short_in_64[] = {0x82, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4};
	CHECK(parse(short_in_64, sizeof short_in_64, UINT64_MAX) == -WS_CLOSE_PROTOCOL);
	const uint8_t top_bit[] = {0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4};
	CHECK(parse(top_bit, sizeof top_bit, UINT64_MAX) == -WS_CLOSE_PROTOCOL);
	/* Unmasked from a client, masked from a server. */
	const uint8_t unmasked[] = {0x82, 0x01, 0x00};
	CHECK(parse(unmasked, sizeof unmasked, 100) == -WS_CLOSE_PROTOCOL);
	struct ws_head head;
	const uint8_t masked[] = {0x82, 0x81, 1, 2, 3, 4, 0};
	CHECK(ws_parse_head(masked, sizeof masked, false, 100, &head) == -WS_CLOSE_PROTOCOL);
	/* Over the caller's limit, from the head alone. */
	const uint8_t big[] = {0x82, 0xff, 0, 0, 0, 0, 0, 0x10, 0, 1, 1, 2, 3, 4};
	CHECK(parse(big, sizeof big, 1u << 20) == -WS_CLOSE_TOO_BIG);
	const uint8_t exactly[] = {0x82, 0xff, 0, 0, 0, 0, 0, 0x10, 0, 0, 1, 2, 3, 4};
	CHECK(parse(exactly, sizeof exactly, 1u << 20) == 14);
	const uint8_t small_over[] = {0x82, 0x85, 1, 2, 3, 4};
	CHECK(parse(small_over, sizeof small_over, 4) == -WS_CLOSE_TOO_BIG);
}

static int add(struct ws_message *message, enum ws_opcode opcode, bool fin, const char *text)
{
	return ws_message_add(message, opcode, fin, (const uint8_t *)text, strlen(text));
}

/* Messages put back together: order, limits, and being used again. */
static void reassembly(void)
{
	struct ws_message message;
	ws_message_init(&message, 10);
	CHECK(add(&message, WS_CONTINUATION, true, "x") == -WS_CLOSE_PROTOCOL);
	CHECK(add(&message, WS_PING, true, "x") == -WS_CLOSE_PROTOCOL);
	CHECK(add(&message, WS_BINARY, false, "abc") == 0);
	CHECK(add(&message, WS_TEXT, true, "x") == -WS_CLOSE_PROTOCOL);
	ws_message_reset(&message);
	CHECK(message.opcode == 0 && message.length == 0);

	/* The limit holds over the whole, exactly. */
	CHECK(add(&message, WS_BINARY, false, "12345") == 0);
	CHECK(add(&message, WS_CONTINUATION, false, "") == 0);
	CHECK(add(&message, WS_CONTINUATION, true, "67890") == 1);
	CHECK(message.length == 10 && memcmp(message.data, "1234567890", 10) == 0);
	ws_message_reset(&message);
	CHECK(add(&message, WS_BINARY, false, "123456") == 0);
	CHECK(add(&message, WS_CONTINUATION, true, "78901") == -WS_CLOSE_TOO_BIG);
	ws_message_reset(&message);
	CHECK(add(&message, WS_BINARY, true, "12345678901") == -WS_CLOSE_TOO_BIG);
	ws_message_reset(&message);

	/* An empty message is a message. */
	CHECK(ws_message_add(&message, WS_TEXT, true, NULL, 0) == 1);
	CHECK(message.opcode == WS_TEXT && message.length == 0 && message.data);
	ws_message_free(&message);

	/* Many small fragments up to 1 MiB. */
	ws_message_init(&message, 1u << 20);
	uint8_t piece[1000];
	memset(piece, 'a', sizeof piece);
	size_t total = 0;
	int result = ws_message_add(&message, WS_BINARY, false, piece, 1);
	for (total = 1; result == 0 && total + sizeof piece <= (1u << 20); total += sizeof piece)
		result = ws_message_add(&message, WS_CONTINUATION, false, piece, sizeof piece);
	CHECK(result == 0);
	CHECK(ws_message_add(&message, WS_CONTINUATION, true, piece, (1u << 20) - total) == 1);
	CHECK(message.length == 1u << 20 && message.capacity <= 1u << 20);
	ws_message_reset(&message);
	CHECK(message.capacity <= 64u << 10); /* a big buffer is not kept */
	ws_message_free(&message);
}

static int text(const char *bytes, size_t length)
{
	struct ws_message message;
	ws_message_init(&message, 100);
	int result = ws_message_add(&message, WS_TEXT, true, (const uint8_t *)bytes, length);
	ws_message_free(&message);
	return result;
}

#define TEXT(literal) text(literal, sizeof literal - 1)

static void utf8(void)
{
	CHECK(TEXT("") == 1);
	CHECK(TEXT("plain ascii") == 1);
	CHECK(TEXT("a\0b") == 1); /* NUL is a character */
	CHECK(TEXT("\xc2\x80 \xdf\xbf \xe0\xa0\x80 \xef\xbf\xbf") == 1);
	CHECK(TEXT("\xf0\x90\x80\x80 \xf4\x8f\xbf\xbf") == 1); /* U+10000, U+10FFFF */
	CHECK(TEXT("\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5") == 1);
	const int bad = -WS_CLOSE_INVALID_DATA;
	CHECK(TEXT("\x80") == bad);             /* a lone continuation */
	CHECK(TEXT("\xc0\xaf") == bad);         /* overlong '/' */
	CHECK(TEXT("\xc1\xbf") == bad);         /* overlong */
	CHECK(TEXT("\xe0\x80\xaf") == bad);     /* overlong, 3 bytes */
	CHECK(TEXT("\xf0\x80\x80\xaf") == bad); /* overlong, 4 bytes */
	CHECK(TEXT("\xed\xa0\x80") == bad);     /* U+D800, a surrogate */
	CHECK(TEXT("\xed\xbf\xbf") == bad);     /* U+DFFF */
	CHECK(TEXT("\xf4\x90\x80\x80") == bad); /* U+110000 */
	CHECK(TEXT("\xf5\x80\x80\x80") == bad); /* no such lead byte */
	CHECK(TEXT("\xff") == bad);
	CHECK(TEXT("ab\xe2\x82") == bad); /* cut short at the end */
	CHECK(TEXT("\xe2\x82 ") == bad);  /* cut short in the middle */
	CHECK(TEXT("\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80"
		   "edited") == bad);

	/* A character split across fragments is whole in the message. */
	struct ws_message message;
	ws_message_init(&message, 100);
	CHECK(ws_message_add(&message, WS_TEXT, false, (const uint8_t *)"\xf0\x9f", 2) == 0);
	CHECK(ws_message_add(&message, WS_CONTINUATION, false, (const uint8_t *)"\x98", 1) == 0);
	CHECK(ws_message_add(&message, WS_CONTINUATION, true, (const uint8_t *)"\x80", 1) == 1);
	ws_message_reset(&message);
	/* ... but not one that never ends. */
	CHECK(ws_message_add(&message, WS_TEXT, false, (const uint8_t *)"ok\xf0\x9f", 4) == 0);
	CHECK(ws_message_add(&message, WS_CONTINUATION, true, (const uint8_t *)"", 0) ==
	      -WS_CLOSE_INVALID_DATA);
	ws_message_reset(&message);
	/* Binary is never checked. */
	CHECK(ws_message_add(&message, WS_BINARY, true, (const uint8_t *)"\xff\xc0", 2) == 1);
	ws_message_free(&message);
}

static bool close_parses(const char *bytes, size_t length, uint16_t *code)
{
	return ws_close_parse((const uint8_t *)bytes, length, code);
}

static void close_frames(void)
{
	uint8_t out[WS_CONTROL_MAX];
	uint16_t code = 0;
	size_t length = ws_close_payload(out, WS_CLOSE_NORMAL, "bye");
	CHECK(length == 5 && memcmp(out,
				    "\x03\xe8"
				    "bye",
				    5) == 0);
	CHECK(ws_close_parse(out, length, &code) && code == 1000);
	CHECK(ws_close_payload(out, WS_CLOSE_PROTOCOL, NULL) == 2);
	CHECK(ws_close_payload(out, WS_CLOSE_NO_STATUS, "ignored") == 0);
	CHECK(ws_close_parse(out, 0, &code) && code == WS_CLOSE_NO_STATUS);

	/* A long reason is cut to fit, never inside a character. */
	char reason[300] = "";
	for (int i = 0; i < 100; i++)
		strcat(reason, "\xc3\xa9"); /* é, 2 bytes each */
	length = ws_close_payload(out, WS_CLOSE_NORMAL, reason);
	CHECKF(length == 124, "%zu", length); /* 2 + 122: 123 would split an é */
	CHECK(ws_close_parse(out, length, &code));
	memset(reason, 'r', 200);
	reason[200] = '\0';
	CHECK(ws_close_payload(out, WS_CLOSE_NORMAL, reason) == WS_CONTROL_MAX);

	/* Which codes may be sent. */
	const uint16_t valid[] = {1000, 1001, 1002, 1003, 1007, 1008, 1009,
				  1010, 1011, 1012, 1013, 1014, 3000, 4999};
	for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
		uint8_t bytes[2] = {(uint8_t)(valid[i] >> 8), (uint8_t)valid[i]};
		CHECKF(ws_close_parse(bytes, 2, &code) && code == valid[i], "%u", valid[i]);
	}
	const uint16_t invalid[] = {0,    1,    999,  1004, 1005, 1006,
				    1015, 1016, 2000, 2999, 5000, 65535};
	for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
		uint8_t bytes[2] = {(uint8_t)(invalid[i] >> 8), (uint8_t)invalid[i]};
		CHECKF(!ws_close_parse(bytes, 2, &code), "%u", invalid[i]);
	}
	CHECK(!close_parses("\x03", 1, &code)); /* one byte */
	CHECK(!close_parses("\x03\xe8\xff", 3, &code));
	CHECK(!close_parses("\x03\xe8\xed\xa0\x80", 5, &code));
	CHECK(close_parses("\x03\xe8\xce\xba", 4, &code));
}

int main(void)
{
	accept_key();
	rfc_examples();
	lengths();
	refusals();
	reassembly();
	utf8();
	close_frames();
	return check_done("websocket");
}
