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

#include "check.h"

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
	if (!b->data || b->len + len + 1 > b->cap) {
		b->cap = (b->len + len + 1) * 2;
		b->data = xrealloc(b->data, b->cap);
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = 0;
}

static void buf_output(void *ctx, const char *data, size_t len)
{
	CHECKF(len > 0, "output of 0 bytes");
	buf_put(ctx, data, len);
}

/* Form i at text[0..n): the length of its occurrence there, 0 when the text
 * ends inside one (a proper prefix), -1 when there is none. A wrapping form
 * (base64, hex) may have "\n" or "\r\n" after any of its characters but the
 * last, a line end at least 8 characters after the one before it. */
static long occurrence(struct mask_set *set, size_t i, const char *text, size_t n)
{
	size_t len;
	const char *f = mask_set_form(set, i, &len);
	bool wraps = mask_set_form_wraps(set, i);
	size_t t = 0, since_break = 0;
	bool broken = false;
	for (size_t k = 0; k < len; k++) {
		/* Before character k: a line end, where one may be. */
		bool may_break = wraps && k > 0 && (!broken || since_break >= 8);
		if (may_break && t < n && (text[t] == '\n' || text[t] == '\r')) {
			if (text[t] == '\r') {
				if (t + 1 == n)
					return 0;
				if (text[t + 1] != '\n')
					return -1;
				t++;
			}
			t++;
			broken = true;
			since_break = 0;
		}
		if (t == n)
			return 0;
		if (text[t] != f[k])
			return -1;
		t++;
		since_break++;
	}
	return (long)t;
}

/* The reference: at each start in order, the longest occurrence of a form;
 * an occurrence starting inside the current run extends it. */
static struct buf reference(struct mask_set *set, const char *text, size_t n)
{
	struct buf out = {0};
	buf_put(&out, "", 0);
	size_t plain = 0, run_end = 0;
	size_t forms = mask_set_form_count(set);
	for (size_t p = 0; p < n; p++) {
		size_t best = 0;
		for (size_t i = 0; i < forms; i++) {
			size_t len;
			const char *f = mask_set_form(set, i, &len);
			if (f[0] != text[p])
				continue;
			long got = occurrence(set, i, text + p, n - p);
			if (got > 0 && (size_t)got > best)
				best = (size_t)got;
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
	for (size_t i = 0; i < mask_set_form_count(set); i++)
		if (occurrence(set, i, s, n) == 0)
			return true;
	return false;
}

/* Streams text in random chunks, checking at every step that what came out
 * is final (a prefix of the reference) and that what is held back could
 * still be the start of a form. */
static void check_stream(struct mask_set *set, const char *text, size_t n, int mode)
{
	struct buf want = reference(set, text, n);
	struct buf got = {0};
	buf_put(&got, "", 0);
	struct mask_stream *stream = mask_stream_new(set, buf_output, &got);
	size_t at = 0;
	while (at < n) {
		size_t chunk = mode == 0 ? 1 : mode == 1 ? 1 + rnd(16) : 1 + rnd((uint32_t)n);
		if (chunk > n - at)
			chunk = n - at;
		mask_stream_feed(stream, text + at, chunk);
		at += chunk;
		CHECKF(got.len <= want.len && memcmp(got.data, want.data, got.len) == 0,
		       "output not final after %zu bytes", at);
		size_t held = mask_stream_pending(stream);
		CHECKF(held == 0 || is_proper_prefix_of_form(set, text + at - held, held),
		       "holds %zu bytes that cannot start a form", held);
	}
	mask_stream_flush(stream);
	CHECKF(got.len == want.len && memcmp(got.data, want.data, got.len) == 0,
	       "stream (mode %d) differs from reference:\n  got  %s\n  want %s", mode, got.data,
	       want.data);
	size_t once_len;
	char *once = mask_bytes(set, text, n, &once_len);
	CHECKF(once_len == want.len && memcmp(once, want.data, once_len) == 0,
	       "mask_bytes differs from reference:\n  got  %s\n  want %s", once, want.data);
	free(once);
	mask_stream_free(stream);
	free(want.data);
	free(got.data);
}

static void random_cases(int cases)
{
	static const char alphabets[][80] = {
		"ab",
		"abc\n",
		"abcdefgh",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\n '\"\\%",
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
		struct buf text = {0};
		size_t target = rnd(600);
		while (text.len < target) {
			uint32_t what = rnd(10);
			size_t forms = mask_set_form_count(set);
			if (what < 2 && forms) {
				size_t len;
				const char *f = mask_set_form(set, rnd((uint32_t)forms), &len);
				/* A whole form, or a cut one (a near miss); now and then
				 * with line ends inside (wrapped, or too close to be). */
				size_t cut = rnd(4) ? len : rnd((uint32_t)len);
				if (rnd(3) == 0) {
					size_t gap = 1 + rnd(12);
					for (size_t k = 0; k < cut; k++) {
						if (k && k % gap == 0) {
							const char *eol = rnd(2) ? "\n" : "\r\n";
							buf_put(&text, eol, strlen(eol));
						}
						buf_put(&text, f + k, 1);
					}
				} else {
					buf_put(&text, f, cut);
				}
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
	CHECKF(strcmp(got, want) == 0, "value %s in %s: got %s, want %s", value, text, got, want);
	free(got);
}

static void base64(const char *in, size_t n, char *out, bool url)
{
	const char *a = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
			    : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)in[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)(unsigned char)in[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)in[i + 2];
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
	CHECKF(strstr(got, "****") != NULL, "base64 of %s%s%s not masked: %s", prefix, secret,
	       suffix, got);
	/* Characters 1 past the prefix's group up to 1 before the end are all S. */
	size_t from = (strlen(prefix) * 8 + 5) / 6 + 1,
	       to = ((strlen(prefix) + strlen(secret)) * 8) / 6 - 1;
	for (size_t k = from; k + 8 <= to; k++) {
		char piece[9];
		memcpy(piece, enc + k, 8);
		piece[8] = 0;
		CHECKF(strstr(got, piece) == NULL, "base64 piece %s of %s survives in %s", piece,
		       secret, got);
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
	size_t from = (strlen(prefix) * 8 + 5) / 6,
	       to = ((strlen(prefix) + strlen(secret)) * 8) / 6;
	for (size_t k = from; k + 8 <= to; k++) {
		char piece[9];
		memcpy(piece, enc + k, 8);
		piece[8] = 0;
		CHECKF(strstr(joined, piece) == NULL, "wrapped (%d) base64 piece %s survives in %s",
		       width, piece, got);
	}
	free(got);
}

/* Random bytes, every value 0..255 (so quotes, controls, line ends and
 * non-UTF-8 bytes all turn up). */
static void random_value(char *v, size_t len)
{
	for (size_t k = 0; k < len; k++)
		v[k] = (char)rnd(256);
}

/* Random bytes around a value: no line-end bytes, since a "\r" before a
 * value that starts with "\n" is its "\r\n" form, masked as well. */
static void random_context(char *v, size_t len)
{
	for (size_t k = 0; k < len; k++) {
		v[k] = (char)rnd(256);
		if (v[k] == '\r' || v[k] == '\n')
			v[k] = 'x';
	}
}

/* text with `piece` [from, to) of `enc` replaced: the expected output when
 * exactly those characters make one masked occurrence. `pos` maps a
 * character of enc to its place in text. */
static void expect_exact(struct mask_set *set, const char *text, size_t n, size_t start, size_t end,
			 const char *what, size_t len, size_t offset)
{
	struct buf want = {0};
	buf_put(&want, text, start);
	buf_put(&want, "****", 4);
	buf_put(&want, text + end, n - end);
	size_t got_len;
	char *got = mask_bytes(set, text, n, &got_len);
	CHECKF(got_len == want.len && memcmp(got, want.data, got_len) == 0,
	       "%s: value of %zu bytes at offset %zu: got\n%.*s\nwant\n%s", what, len, offset,
	       (int)got_len, got, want.data);
	free(got);
	free(want.data);
}

/* enc wrapped every `width` characters with `eol`, ending with one; pos[i]
 * receives where enc[i] lands. */
static struct buf wrap_lines(const char *enc, size_t n, size_t width, const char *eol, size_t *pos)
{
	struct buf out = {0};
	for (size_t i = 0; i < n; i++) {
		if (i && i % width == 0)
			buf_put(&out, eol, strlen(eol));
		pos[i] = out.len;
		buf_put(&out, enc + i, 1);
	}
	buf_put(&out, eol, strlen(eol));
	return out;
}

/* base64 of prefix + value + suffix, wrapped as base64(1) (76 columns) and
 * PEM / openssl / base64 -w64 write it, LF and CRLF, for every value length
 * from 8 to 200 and every offset of the value in the stream (so every
 * alignment and every column a line break can fall on, the breaks anywhere
 * inside the value's characters or just beside them): the characters that
 * depend on the value alone, on however many lines and however short the
 * piece on a line, make one "****" and nothing else changes; the stream and
 * one-shot maskers agree with the reference. */
static void wrapped_base64_cases(void)
{
	static const size_t widths[] = {64, 76};
	static const char *const eols[] = {"\n", "\r\n"};
	char value[200], plain[300], enc[500];
	size_t pos[500] = {0};
	int checked = 0;
	for (size_t len = 8; len <= 200; len++) {
		random_value(value, len);
		const char *values[] = {value};
		struct mask_set *set = mask_set_new(values, &len, 1);
		for (size_t w = 0; w < 2; w++)
			for (size_t offset = 0; offset < widths[w] / 4 * 3; offset++) {
				const char *eol = eols[(len + offset) % 2];
				bool url = (len + offset / 2) % 2;
				size_t suffix = rnd(3), n = offset + len + suffix;
				random_context(plain, offset);
				memcpy(plain + offset, value, len);
				random_context(plain + offset + len, suffix);
				base64(plain, n, enc, url);
				size_t first = (offset * 8 + 5) / 6, last = (offset + len) * 8 / 6;
				struct buf text = wrap_lines(enc, strlen(enc), widths[w], eol, pos);
				expect_exact(set, text.data, text.len, pos[first],
					     pos[last - 1] + 1,
					     url ? "wrapped url-safe base64" : "wrapped base64",
					     len, offset);
				/* The reference and the stream, for a share of them (the
				 * reference is slow): every length, each width and line end. */
				if (offset % 7 == len % 7)
					check_stream(set, text.data, text.len, (int)(offset % 3));
				free(text.data);
				checked++;
			}
		mask_set_unref(set);
	}
	printf("mask: %d wrapped base64 texts\n", checked);
}

/* Hex of the value, lower and upper case, unwrapped (Python's .hex()) and
 * wrapped at 60 (xxd -p), 64 and 76 columns, LF and CRLF, for every value
 * length from 8 to 200 and every column the value can start at. */
static void hex_cases(void)
{
	static const size_t widths[] = {0, 60, 64, 76};
	char value[200], plain[300], enc[700];
	size_t pos[700] = {0};
	int checked = 0;
	for (size_t len = 8; len <= 200; len++) {
		random_value(value, len);
		const char *values[] = {value};
		struct mask_set *set = mask_set_new(values, &len, 1);
		for (size_t w = 0; w < 4; w++) {
			size_t offsets = widths[w] ? widths[w] / 2 : 3;
			for (size_t offset = 0; offset < offsets; offset++) {
				const char *digits = (len + offset) % 2 ? "0123456789abcdef"
									: "0123456789ABCDEF";
				const char *eol = (len + offset / 2) % 2 ? "\n" : "\r\n";
				size_t suffix = rnd(3), n = offset + len + suffix;
				random_context(plain, offset);
				memcpy(plain + offset, value, len);
				random_context(plain + offset + len, suffix);
				for (size_t k = 0; k < n; k++) {
					enc[2 * k] = digits[(unsigned char)plain[k] >> 4];
					enc[2 * k + 1] = digits[(unsigned char)plain[k] & 15];
				}
				enc[2 * n] = 0;
				struct buf text = wrap_lines(
					enc, 2 * n, widths[w] ? widths[w] : 100000, eol, pos);
				expect_exact(set, text.data, text.len, pos[2 * offset],
					     pos[2 * (offset + len) - 1] + 1, "hex", len, offset);
				if (offset % 5 == len % 5)
					check_stream(set, text.data, text.len, (int)(offset % 3));
				free(text.data);
				checked++;
			}
		}
		mask_set_unref(set);
	}
	printf("mask: %d hex texts\n", checked);
}

/* Written here independently of the masker's encoders: Python's repr() of
 * bytes (its choice of quote included), every byte as \xNN (printf, echo -e)
 * and as octal \NNN, and bash's $'...' (printf %q of a value with control
 * bytes, in the C locale). */
static size_t python_bytes_repr(const char *v, size_t len, char *out)
{
	bool single = memchr(v, '\'', len) != NULL, dbl = memchr(v, '"', len) != NULL;
	char quote = single && !dbl ? '"' : '\'';
	size_t o = 0;
	out[o++] = 'b';
	out[o++] = quote;
	for (size_t k = 0; k < len; k++) {
		unsigned char c = (unsigned char)v[k];
		if (c == quote || c == '\\')
			o += (size_t)sprintf(out + o, "\\%c", c);
		else if (c == '\t')
			o += (size_t)sprintf(out + o, "\\t");
		else if (c == '\n')
			o += (size_t)sprintf(out + o, "\\n");
		else if (c == '\r')
			o += (size_t)sprintf(out + o, "\\r");
		else if (c < 0x20 || c >= 0x7f)
			o += (size_t)sprintf(out + o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	out[o++] = quote;
	out[o] = 0;
	return o;
}

static size_t bash_ansi_c(const char *v, size_t len, char *out)
{
	static const char named_from[] = "\a\b\t\n\v\f\r\x1b\\'";
	static const char named_to[] = "abtnvfrE\\'";
	size_t o = 0;
	o += (size_t)sprintf(out, "$'");
	for (size_t k = 0; k < len; k++) {
		unsigned char c = (unsigned char)v[k];
		const char *named = c ? strchr(named_from, c) : NULL;
		if (named)
			o += (size_t)sprintf(out + o, "\\%c", named_to[named - named_from]);
		else if (c < 0x20 || c >= 0x7f)
			o += (size_t)sprintf(out + o, "\\%03o", c);
		else
			out[o++] = (char)c;
	}
	out[o++] = '\'';
	out[o] = 0;
	return o;
}

/* bash's printf %q of a value with no control bytes: a backslash before
 * what the shell would take as syntax; # and ~ only where a word starts. */
static size_t bash_backslashed(const char *v, size_t len, char *out)
{
	size_t o = 0;
	for (size_t k = 0; k < len; k++) {
		char c = v[k];
		bool special = c && strchr(" \t\n'\"\\|&;()<>!{}*[?]^$`,", c);
		if (c == '#' && k == 0)
			special = true;
		if (c == '~' && (k == 0 || v[k - 1] == '=' || v[k - 1] == ':'))
			special = true;
		if (special)
			out[o++] = '\\';
		out[o++] = c;
	}
	out[o] = 0;
	return o;
}

/* Go's %q (strconv.Quote) of ASCII text, and C's string literal escapes. */
static size_t go_quoted(const char *v, size_t len, char *out)
{
	static const char named_from[] = "\a\b\f\n\r\t\v\\\"";
	static const char named_to[] = "abfnrtv\\\"";
	size_t o = 0;
	out[o++] = '"';
	for (size_t k = 0; k < len; k++) {
		unsigned char c = (unsigned char)v[k];
		const char *named = c ? strchr(named_from, c) : NULL;
		if (named)
			o += (size_t)sprintf(out + o, "\\%c", named_to[named - named_from]);
		else if (c < 0x20 || c == 0x7f)
			o += (size_t)sprintf(out + o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	out[o++] = '"';
	out[o] = 0;
	return o;
}

static void escape_cases(void)
{
	char value[200], enc[1000], text[1100];
	int checked = 0;
	for (size_t len = 8; len <= 200; len++) {
		/* Printable text with now and then a quote, backslash or control
		 * byte, and fully random bytes. */
		for (int kind = 0; kind < 3; kind++) {
			random_value(value, len);
			if (kind == 0)
				for (size_t k = 0; k < len; k++)
					if (rnd(8))
						value[k] = (char)(0x20 + rnd(95));
			if (kind == 2) /* printable ASCII: printf %q backslashes it */
				for (size_t k = 0; k < len; k++)
					value[k] = (char)(0x20 + rnd(95));
			const char *values[] = {value};
			struct mask_set *set = mask_set_new(values, &len, 1);
			for (int style = 0; style < 7; style++) {
				size_t n = 0;
				/* Go's quoting is tried on ASCII values only. */
				if (style == 6 && kind == 1)
					continue;
				switch (style) {
				case 0: n = python_bytes_repr(value, len, enc); break;
				case 1: n = bash_ansi_c(value, len, enc); break;
				case 5:
					n = kind == 2 ? bash_backslashed(value, len, enc)
						      : bash_ansi_c(value, len, enc);
					break;
				case 6: n = go_quoted(value, len, enc); break;
				case 2:
				case 3:
					for (size_t k = 0; k < len; k++)
						n += (size_t)sprintf(
							enc + n, style == 2 ? "\\x%02x" : "\\x%02X",
							(unsigned char)value[k]);
					break;
				case 4:
					for (size_t k = 0; k < len; k++)
						n += (size_t)sprintf(enc + n, "\\%03o",
								     (unsigned char)value[k]);
					break;
				}
				/* The quotes around a repr stay; the inside is the value. */
				bool dollar = style == 1 || (style == 5 && kind != 2);
				size_t open = style == 0 || dollar ? 2 : style == 6 ? 1 : 0;
				size_t close = style == 0 || dollar || style == 6 ? 1 : 0;
				size_t t = (size_t)sprintf(text, "v=");
				memcpy(text + t, enc, n);
				t += n;
				text[t++] = '\n';
				expect_exact(set, text, t, 2 + open, 2 + n - close,
					     style == 0   ? "python repr"
					     : style == 1 ? "bash $'...'"
					     : style == 5 ? "printf %q"
					     : style == 6 ? "go %q"
							  : "escaped bytes",
					     len, (size_t)style);
				if ((len + (size_t)style) % 4 == 0)
					check_stream(set, text, t, style % 3);
				checked++;
			}
			mask_set_unref(set);
		}
	}
	printf("mask: %d escaped texts\n", checked);
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
	const char *nested[] = {"abcdefgh", "xxabcdefghyy", "ghyyzzzzzz"};
	struct mask_set *set = mask_set_new(nested, NULL, 3);
	char *out = mask_text(set, "1 xxabcdefghyy 2 abcdefgh 3 xxabcdefghyyzzzzzz 4");
	CHECKF(strcmp(out, "1 **** 2 **** 3 **** 4") == 0, "nested: %s", out);
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
	/* As bash's printf %q, Python's repr() and xxd -p wrote them. */
	expect("p@ss w/rd!1$x", "v=p@ss\\ w/rd\\!1\\$x\n", "v=****\n");
	expect("#~a=~b:~c d", "\\#~a=\\~b:\\~c\\ d", "****");
	expect("tab\there\nnl\x01\x7f", "v=$'tab\\there\\nnl\\001\\177'", "v=$'****'");
	expect("\x1b\a\v\b\f it's \\ \"q\"", "$'\\E\\a\\v\\b\\f it\\'s \\\\ \"q\"'", "$'****'");
	expect("a\x01\x7f\t\xc3\xa9\"'xyz", "'a\\x01\\x7f\\t\xc3\xa9\"\\'xyz'", "'****'");
	expect("a\x01\x7f\t\xc3\xa9\"'xyz", "b'a\\x01\\x7f\\t\\xc3\\xa9\"\\'xyz'", "b'****'");
	expect("sk-live-0123456789", "id 736b2d6c6976652d30313233343536373839\n", "id ****\n");
	expect("sk-live-0123456789", "736B2D6C6976652D30\r\n313233343536373839", "****");
	expect("sk-live-0123456789",
	       "\\x73\\x6b\\x2d\\x6c\\x69\\x76\\x65\\x2d\\x30\\x31\\x32\\x33\\x34\\x35\\x36\\x37\\x"
	       "38\\x39",
	       "****");
	/* A hex run too short to be the value, or a line end too early. */
	expect("sk-live-0123456789", "736b2d6c6976652d3031323334353637383",
	       "736b2d6c6976652d3031323334353637383");
	expect("sk-live-0123456789", "736b2d6c6976652d30\n3132\n33343536373839",
	       "736b2d6c6976652d30\n3132\n33343536373839");
	const char *secrets[] = {"Zq9-secret-value", "abcdefgh", "12345678901",
				 "\xff\xfe\x01binary!!"};
	const char *prefixes[] = {"", "u", "us", "user:", "user:x"};
	const char *suffixes[] = {"", "\n", "ab", "xyz"};
	for (size_t a = 0; a < 4; a++)
		for (size_t b = 0; b < 5; b++)
			for (size_t c = 0; c < 4; c++)
				for (int url = 0; url < 2; url++)
					check_base64(secrets[a], prefixes[b], suffixes[c], url);
	const char *long_secret =
		"-----BEGIN KEY-----MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7-----END";
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
		CHECKF(strcmp(out, "id **** end") == 0, "many: %s", out);
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
	struct buf got = {0};
	struct mask_stream *stream = mask_stream_new(set, buf_output, &got);
	/* A line that cannot start a value comes out at once. */
	mask_stream_feed(stream, "hello world\n", 12);
	CHECKF(mask_stream_pending(stream) == 0 && got.len == 12, "plain line held back");
	/* Byte by byte across the value, ending without a newline. */
	const char *text = "key: sk-live-0123456789";
	for (size_t i = 0; i < strlen(text); i++)
		mask_stream_feed(stream, text + i, 1);
	mask_stream_flush(stream);
	CHECKF(strcmp(got.data, "hello world\nkey: ****") == 0, "byte by byte: %s", got.data);
	/* A value added mid-stream: held bytes are checked against it too. */
	got.len = 0;
	const char *both[] = {s, "new-value-42424242"};
	struct mask_set *later = mask_set_new(both, NULL, 2);
	mask_stream_feed(stream, "a sk-live-0123", 14);
	mask_stream_set_values(stream, later);
	mask_stream_feed(stream, "456789 b new-value-42424242 c\n", 30);
	mask_stream_flush(stream);
	CHECKF(got.len > 0 && strcmp(got.data, "a **** b **** c\n") == 0, "set_values: %s",
	       got.data);
	mask_stream_free(stream);
	mask_set_unref(later);
	mask_set_unref(set);
	free(got.data);
	/* An empty set passes everything through. */
	set = mask_set_new(NULL, NULL, 0);
	char *out = mask_text(set, "nothing to hide");
	CHECKF(strcmp(out, "nothing to hide") == 0, "empty set: %s", out);
	free(out);
	mask_set_unref(set);
	out = mask_text(NULL, "no set");
	CHECKF(strcmp(out, "no set") == 0, "NULL set: %s", out);
	free(out);
}

int main(int argc, char **argv)
{
	int cases = argc > 1 ? atoi(argv[1]) : 3000;
	named_cases();
	stream_cases();
	random_cases(cases);
	wrapped_base64_cases();
	hex_cases();
	escape_cases();
	printf("mask: %d random cases\n", cases);
	return check_done("mask");
}
