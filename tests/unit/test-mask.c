/* test-mask.c: the streaming masker against a slow, obviously right
 * reference (whole text at once, every form tried at every start), on random
 * text with planted values and random chunkings; then each named case. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mask.h"
#include "xalloc.h"

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

struct buf {
	char *data;
	size_t len, cap;
};

static void buf_put(struct buf *b, const char *data, size_t len)
{
	if (b->len + len + 1 > b->cap) {
		b->cap = (b->len + len + 1) * 2;
		b->data = xrealloc(b->data, b->cap);
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = 0;
}

static void buf_output(void *ctx, const char *data, size_t len)
{
	CHECK(len > 0, "output of 0 bytes");
	buf_put(ctx, data, len);
}

/* The reference: at each start in order, the longest form that matches;
 * an occurrence starting inside the current run extends it. */
static struct buf reference(struct mask_set *set, const char *text, size_t n)
{
	struct buf out = { 0 };
	buf_put(&out, "", 0);
	size_t plain = 0, run_end = 0;
	size_t forms = mask_set_form_count(set);
	for (size_t p = 0; p < n; p++) {
		size_t best = 0;
		for (size_t i = 0; i < forms; i++) {
			size_t len;
			const char *f = mask_set_form(set, i, &len);
			if (len <= n - p && len > best && memcmp(text + p, f, len) == 0)
				best = len;
		}
		if (!best)
			continue;
		if (p < run_end) {
			if (p + best > run_end)
				run_end = plain = p + best;
			continue;
		}
		buf_put(&out, text + plain, p - plain);
		buf_put(&out, "****", 4);
		run_end = plain = p + best;
	}
	if (plain < n)
		buf_put(&out, text + plain, n - plain);
	return out;
}

static bool is_proper_prefix_of_form(struct mask_set *set, const char *s, size_t n)
{
	for (size_t i = 0; i < mask_set_form_count(set); i++) {
		size_t len;
		const char *f = mask_set_form(set, i, &len);
		if (len > n && memcmp(f, s, n) == 0)
			return true;
	}
	return false;
}

/* Streams text in random chunks, checking at every step that what came out
 * is final (a prefix of the reference) and that what is held back could
 * still be the start of a form. */
static void check_stream(struct mask_set *set, const char *text, size_t n, int mode)
{
	struct buf want = reference(set, text, n);
	struct buf got = { 0 };
	buf_put(&got, "", 0);
	struct mask_stream *stream = mask_stream_new(set, buf_output, &got);
	size_t at = 0;
	while (at < n) {
		size_t chunk = mode == 0 ? 1 : mode == 1 ? 1 + rnd(16) : 1 + rnd((uint32_t)n);
		if (chunk > n - at)
			chunk = n - at;
		mask_stream_feed(stream, text + at, chunk);
		at += chunk;
		CHECK(got.len <= want.len && memcmp(got.data, want.data, got.len) == 0,
		      "output not final after %zu bytes", at);
		size_t held = mask_stream_pending(stream);
		CHECK(held == 0 || is_proper_prefix_of_form(set, text + at - held, held),
		      "holds %zu bytes that cannot start a form", held);
	}
	mask_stream_flush(stream);
	CHECK(got.len == want.len && memcmp(got.data, want.data, got.len) == 0,
	      "stream (mode %d) differs from reference:\n  got  %s\n  want %s", mode, got.data, want.data);
	size_t once_len;
	char *once = mask_bytes(set, text, n, &once_len);
	CHECK(once_len == want.len && memcmp(once, want.data, once_len) == 0,
	      "mask_bytes differs from reference:\n  got  %s\n  want %s", once, want.data);
	free(once);
	mask_stream_free(stream);
	free(want.data);
	free(got.data);
}

static void random_cases(int cases)
{
	static const char alphabets[][80] = {
		"ab", "abc\n", "abcdefgh", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\n '\"\\%",
	};
	for (int c = 0; c < cases; c++) {
		const char *alpha = alphabets[rnd(4)];
		size_t alen = strlen(alpha);
		size_t nvalues = 1 + rnd(c % 10 == 0 ? 40 : 5);
		char **values = xcalloc(nvalues, sizeof *values);
		for (size_t v = 0; v < nvalues; v++) {
			/* Now and then a long one, whose base64 is also masked piecewise. */
			size_t len = c % 7 == 0 && v == 0 ? 50 + rnd(60) : 4 + rnd(30);
			values[v] = xmalloc(len + 1);
			for (size_t k = 0; k < len; k++)
				values[v][k] = alpha[rnd((uint32_t)alen)];
			values[v][len] = 0;
		}
		struct mask_set *set = mask_set_new((const char *const *)values, NULL, nvalues);
		struct buf text = { 0 };
		size_t target = rnd(600);
		while (text.len < target) {
			uint32_t what = rnd(10);
			size_t forms = mask_set_form_count(set);
			if (what < 2 && forms) {
				size_t len;
				const char *f = mask_set_form(set, rnd((uint32_t)forms), &len);
				/* A whole form, or a cut one (a near miss). */
				buf_put(&text, f, rnd(4) ? len : rnd((uint32_t)len));
			} else {
				char ch = alpha[rnd((uint32_t)alen)];
				buf_put(&text, &ch, 1);
			}
		}
		check_stream(set, text.data ? text.data : "", text.len, c % 3);
		mask_set_unref(set);
		for (size_t v = 0; v < nvalues; v++)
			free(values[v]);
		free(values);
		free(text.data);
	}
}

static char *masked(const char *value, const char *text)
{
	struct mask_set *set = mask_set_new(&value, NULL, 1);
	char *out = mask_text(set, text);
	mask_set_unref(set);
	return out;
}

static void expect(const char *value, const char *text, const char *want)
{
	char *got = masked(value, text);
	CHECK(strcmp(got, want) == 0, "value %s in %s: got %s, want %s", value, text, got, want);
	free(got);
}

static void base64(const char *in, size_t n, char *out, bool url)
{
	const char *a = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
			    : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)in[i] << 16;
		if (i + 1 < n) v |= (uint32_t)(unsigned char)in[i + 1] << 8;
		if (i + 2 < n) v |= (unsigned char)in[i + 2];
		out[o++] = a[v >> 18];
		out[o++] = a[(v >> 12) & 63];
		out[o++] = i + 1 < n ? a[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? a[v & 63] : '=';
	}
	out[o] = 0;
}

/* base64(prefix + S + suffix) must keep no run of 8 characters that depends
 * on S alone: we check that the output is shorter and carries "****", and
 * that none of S's own 8-char base64 pieces survive. */
static void check_base64(const char *secret, const char *prefix, const char *suffix, bool url)
{
	char plain[256], enc[512];
	snprintf(plain, sizeof plain, "%s%s%s", prefix, secret, suffix);
	base64(plain, strlen(plain), enc, url);
	char text[600];
	snprintf(text, sizeof text, "Authorization: Basic %s\n", enc);
	char *got = masked(secret, text);
	CHECK(strstr(got, "****") != NULL, "base64 of %s%s%s not masked: %s", prefix, secret, suffix, got);
	/* Characters 1 past the prefix's group up to 1 before the end are all S. */
	size_t from = (strlen(prefix) * 8 + 5) / 6 + 1, to = ((strlen(prefix) + strlen(secret)) * 8) / 6 - 1;
	for (size_t k = from; k + 8 <= to; k++) {
		char piece[9];
		memcpy(piece, enc + k, 8);
		piece[8] = 0;
		CHECK(strstr(got, piece) == NULL, "base64 piece %s of %s survives in %s", piece, secret, got);
	}
	free(got);
}

/* A long value's base64, wrapped at `width` columns as base64(1) and PEM
 * do: joined again, no 8 characters of its core survive. */
static void check_base64_wrapped(const char *secret, const char *prefix, int width)
{
	char plain[512], enc[1024], wrapped[1200], joined[1200];
	snprintf(plain, sizeof plain, "%s%s\n", prefix, secret);
	base64(plain, strlen(plain), enc, false);
	size_t w = 0;
	for (size_t i = 0; enc[i]; i++) {
		if (i && i % (size_t)width == 0)
			wrapped[w++] = '\n';
		wrapped[w++] = enc[i];
	}
	wrapped[w] = 0;
	char *got = masked(secret, wrapped);
	size_t j = 0;
	for (char *c = got; *c; c++)
		if (*c != '\n')
			joined[j++] = *c;
	joined[j] = 0;
	size_t from = (strlen(prefix) * 8 + 5) / 6, to = ((strlen(prefix) + strlen(secret)) * 8) / 6;
	for (size_t k = from; k + 8 <= to; k++) {
		char piece[9];
		memcpy(piece, enc + k, 8);
		piece[8] = 0;
		CHECK(strstr(joined, piece) == NULL, "wrapped (%d) base64 piece %s survives in %s", width, piece, got);
	}
	free(got);
}

static void named_cases(void)
{
	const char *s = "hunter2-correct-horse";
	expect(s, "pw=hunter2-correct-horse!", "pw=****!");
	expect(s, "hunter2-correct-horse", "****");
	expect(s, "a hunter2-correct-hors", "a hunter2-correct-hors");
	expect("short", "a short text", "a short text");
	expect("abcdefg\n", "abcdefg and abcdefg\n", "abcdefg and ****");
	/* Nested and overlapping: the longest cover wins, one "****". */
	const char *nested[] = { "abcdefgh", "xxabcdefghyy", "ghyyzzzzzz" };
	struct mask_set *set = mask_set_new(nested, NULL, 3);
	char *out = mask_text(set, "1 xxabcdefghyy 2 abcdefgh 3 xxabcdefghyyzzzzzz 4");
	CHECK(strcmp(out, "1 **** 2 **** 3 **** 4") == 0, "nested: %s", out);
	free(out);
	mask_set_unref(set);
	/* Encodings. */
	expect("p@ss w/rd:12345", "https://u:p%40ss%20w%2Frd%3A12345@db", "https://u:****@db");
	expect("p@ss w/rd:12345", "q=p%40ss+w%2frd%3a12345", "q=****");
	expect("p@ss w/rd:12345", "q=p%40ss+w%2Frd%3A12345&", "q=****&");
	expect("quote\"back\\slash", "{\"v\":\"quote\\\"back\\\\slash\"}", "{\"v\":\"****\"}");
	expect("line-one\nline-two", "{\"v\":\"line-one\\nline-two\"}", "{\"v\":\"****\"}");
	expect("caf\xc3\xa9-secret-1", "{\"v\":\"caf\\u00e9-secret-1\"}", "{\"v\":\"****\"}");
	expect("a<b>&c-secret", "{\"v\":\"a\\u003cb\\u003e\\u0026c-secret\"}", "{\"v\":\"****\"}");
	expect("it's (a) secret!", "q=it's%20(a)%20secret!", "q=****");
	expect("it's-a-secret", "+ echo 'it'\\''s-a-secret'", "+ echo '****'");
	expect("dollar$secret", "declare -x S=\"dollar\\$secret\"", "declare -x S=\"****\"");
	expect("line-one\nline-two", "line-one\r\nline-two\r\n", "****\r\n");
	expect("line-one\r\nline-two", "line-one\nline-two\n", "****\n");
	const char *secrets[] = { "Zq9-secret-value", "abcdefgh", "12345678901", "\xff\xfe\x01binary!!" };
	const char *prefixes[] = { "", "u", "us", "user:", "user:x" };
	const char *suffixes[] = { "", "\n", "ab", "xyz" };
	for (size_t a = 0; a < 4; a++)
		for (size_t b = 0; b < 5; b++)
			for (size_t c = 0; c < 4; c++)
				for (int url = 0; url < 2; url++)
					check_base64(secrets[a], prefixes[b], suffixes[c], url);
	const char *long_secret = "-----BEGIN KEY-----MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7-----END";
	for (size_t b = 0; b < 5; b++)
		for (int width = 60; width <= 80; width += 4)
			check_base64_wrapped(long_secret, prefixes[b], width);
	/* Many values. */
	enum { MANY = 2000 };
	char **many = xmalloc(MANY * sizeof *many);
	for (int i = 0; i < MANY; i++)
		many[i] = xasprintf("tok-%05d-%08x", i, (unsigned)(i * 2654435761u));
	set = mask_set_new((const char *const *)many, NULL, MANY);
	for (int i = 0; i < MANY; i += 97) {
		char line[100];
		snprintf(line, sizeof line, "id %s end", many[i]);
		out = mask_text(set, line);
		CHECK(strcmp(out, "id **** end") == 0, "many: %s", out);
		free(out);
	}
	mask_set_unref(set);
	for (int i = 0; i < MANY; i++)
		free(many[i]);
	free(many);
}

static void stream_cases(void)
{
	const char *s = "sk-live-0123456789";
	struct mask_set *set = mask_set_new(&s, NULL, 1);
	struct buf got = { 0 };
	struct mask_stream *stream = mask_stream_new(set, buf_output, &got);
	/* A line that cannot start a value comes out at once. */
	mask_stream_feed(stream, "hello world\n", 12);
	CHECK(mask_stream_pending(stream) == 0 && got.len == 12, "plain line held back");
	/* Byte by byte across the value, ending without a newline. */
	const char *text = "key: sk-live-0123456789";
	for (size_t i = 0; i < strlen(text); i++)
		mask_stream_feed(stream, text + i, 1);
	mask_stream_flush(stream);
	CHECK(strcmp(got.data, "hello world\nkey: ****") == 0, "byte by byte: %s", got.data);
	/* A value added mid-stream: held bytes are checked against it too. */
	got.len = 0;
	const char *both[] = { s, "new-value-42424242" };
	struct mask_set *later = mask_set_new(both, NULL, 2);
	mask_stream_feed(stream, "a sk-live-0123", 14);
	mask_stream_set_values(stream, later);
	mask_stream_feed(stream, "456789 b new-value-42424242 c\n", 30);
	mask_stream_flush(stream);
	CHECK(got.len > 0 && strcmp(got.data, "a **** b **** c\n") == 0, "set_values: %s", got.data);
	mask_stream_free(stream);
	mask_set_unref(later);
	mask_set_unref(set);
	free(got.data);
	/* An empty set passes everything through. */
	set = mask_set_new(NULL, NULL, 0);
	char *out = mask_text(set, "nothing to hide");
	CHECK(strcmp(out, "nothing to hide") == 0, "empty set: %s", out);
	free(out);
	mask_set_unref(set);
	out = mask_text(NULL, "no set");
	CHECK(strcmp(out, "no set") == 0, "NULL set: %s", out);
	free(out);
}

int main(int argc, char **argv)
{
	int cases = argc > 1 ? atoi(argv[1]) : 3000;
	named_cases();
	stream_cases();
	random_cases(cases);
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("mask: all passed (%d random cases)\n", cases);
	return 0;
}
