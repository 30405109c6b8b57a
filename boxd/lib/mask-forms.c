/* mask-forms.c: builds the forms a secret value takes in output: line-end
 * variants, JSON escaping, URL-encoding, shell quoting, backslash escapes,
 * hex and base64 cores. */
#include "mask-forms.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "secret-buffer.h"
#include "xalloc.h"

/* The forms are built in growable byte strings wiped when freed (they
 * hold secret material): struct secret_buffer. */
static void bytes_put(struct secret_buffer *b, const char *data, size_t len)
{
	secret_buffer_append(b, data, len);
}

static void bytes_putc(struct secret_buffer *b, char c)
{
	bytes_put(b, &c, 1);
}

static void bytes_wipe(struct secret_buffer *b)
{
	secret_buffer_wipe(b);
}

void mask_forms_init(struct mask_forms *forms)
{
	*forms = (struct mask_forms){0};
}

/* Takes ownership of b's buffer. */
static void forms_take_as(struct mask_forms *forms, struct secret_buffer *b, bool wraps)
{
	if (forms->count == forms->cap) {
		forms->cap = forms->cap ? forms->cap * 2 : 16;
		forms->items = xrealloc(forms->items, forms->cap * sizeof *forms->items);
	}
	forms->items[forms->count++] = (struct mask_form_item){b->data, b->length, wraps};
	*b = (struct secret_buffer){0};
}

static void forms_take(struct mask_forms *forms, struct secret_buffer *b)
{
	forms_take_as(forms, b, false);
}

static void forms_copy(struct mask_forms *forms, const char *data, size_t len)
{
	struct secret_buffer b = {0};
	bytes_put(&b, data, len);
	forms_take(forms, &b);
}

static const char hex_upper[] = "0123456789ABCDEF";
static const char hex_lower[] = "0123456789abcdef";

/* JSON string escaping as encoders write it: cJSON (no flag), Python's
 * json.dumps (JSON_ASCII: non-ASCII as \uXXXX), PHP (JSON_SLASH: "\/"), Go
 * (JSON_HTML: < > & as \u003c \u003e \u0026). Returns false (and nothing)
 * for invalid UTF-8 when JSON_ASCII is asked. */
enum json_style { JSON_ASCII = 1, JSON_SLASH = 2, JSON_HTML = 4 };

static bool encode_json(struct secret_buffer *out, const char *v, size_t len, int style)
{
	bool ascii = style & JSON_ASCII, slash = style & JSON_SLASH, html = style & JSON_HTML;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];
		char esc[16];
		switch (c) {
		case '"': bytes_put(out, "\\\"", 2); continue;
		case '\\': bytes_put(out, "\\\\", 2); continue;
		case '\n': bytes_put(out, "\\n", 2); continue;
		case '\r': bytes_put(out, "\\r", 2); continue;
		case '\t': bytes_put(out, "\\t", 2); continue;
		case '\b': bytes_put(out, "\\b", 2); continue;
		case '\f': bytes_put(out, "\\f", 2); continue;
		case '/':
			if (slash) {
				bytes_put(out, "\\/", 2);
				continue;
			}
			break;
		}
		if (c < 0x20 || (html && (c == '<' || c == '>' || c == '&'))) {
			esc[0] = '\\';
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex_lower[c >> 4];
			esc[5] = hex_lower[c & 15];
			bytes_put(out, esc, 6);
			continue;
		}
		if (c < 0x80 || !ascii) {
			bytes_putc(out, (char)c);
			continue;
		}
		/* Decode one UTF-8 sequence into a code point. */
		int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
		if (extra < 0 || c >= 0xF8 || i + (size_t)extra >= len)
			return false;
		uint32_t cp = c & (0x3F >> extra);
		for (int k = 1; k <= extra; k++) {
			unsigned char cc = (unsigned char)v[i + k];
			if ((cc & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (cc & 0x3F);
		}
		i += extra;
		uint32_t units[2] = {cp, 0};
		int n = 1;
		if (cp >= 0x10000) {
			cp -= 0x10000;
			units[0] = 0xD800 | (cp >> 10);
			units[1] = 0xDC00 | (cp & 0x3FF);
			n = 2;
		}
		for (int k = 0; k < n; k++) {
			esc[0] = '\\';
			esc[1] = 'u';
			for (int d = 0; d < 4; d++)
				esc[2 + d] = hex_lower[(units[k] >> (12 - 4 * d)) & 15];
			bytes_put(out, esc, 6);
		}
	}
	return true;
}

/* Flavour bits; every combination is a form. URL_JS keeps !'()* as
 * JavaScript's encodeURIComponent does. */
enum url_style { URL_LOWER = 1, URL_PLUS = 2, URL_KEEP_SLASH = 4, URL_JS = 8 };

/* Percent-encoding of everything but RFC 3986's unreserved characters, in
 * the flavours common encoders produce. */
static void encode_url(struct secret_buffer *out, const char *v, size_t len, enum url_style style)
{
	const char *hex = style & URL_LOWER ? hex_lower : hex_upper;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];
		bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
				  (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
				  c == '~';
		bool js_kept = (style & URL_JS) &&
			       (c == '!' || c == '\'' || c == '(' || c == ')' || c == '*');
		if (unreserved || js_kept || (c == '/' && (style & URL_KEEP_SLASH))) {
			bytes_putc(out, (char)c);
		} else if (c == ' ' && (style & URL_PLUS)) {
			bytes_putc(out, '+');
		} else {
			char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
			bytes_put(out, esc, 3);
		}
	}
}

/* Inside '...': a quote becomes '\'' (bash `set -x`, ${S@Q}, shlex.quote). */
static void encode_shell_single(struct secret_buffer *out, const char *v, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (v[i] == '\'')
			bytes_put(out, "'\\''", 4);
		else
			bytes_putc(out, v[i]);
	}
}

/* Inside "...": \ " $ ` get a backslash (declare -p, export -p). */
static void encode_shell_double(struct secret_buffer *out, const char *v, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (v[i] == '\\' || v[i] == '"' || v[i] == '$' || v[i] == '`')
			bytes_putc(out, '\\');
		bytes_putc(out, v[i]);
	}
}

/* The base64 characters that depend on the value alone when it sits `align`
 * bytes (0..2) past a 3-byte group boundary of a longer base64 stream: the
 * characters whose 6 bits all come from the value. */
static void encode_base64_core(struct secret_buffer *out, const char *v, size_t len, int align,
			       bool url_safe)
{
	const char *alphabet =
		url_safe ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
			 : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t bit_from = 8 * (size_t)align, bit_to = bit_from + 8 * len;
	size_t first = (bit_from + 5) / 6, last = bit_to / 6; /* chars [first, last) */
	for (size_t k = first; k < last; k++) {
		unsigned sextet = 0;
		for (size_t bit = 6 * k; bit < 6 * k + 6; bit++) {
			size_t byte = bit / 8 - (size_t)align;
			unsigned b = ((unsigned char)v[byte] >> (7 - bit % 8)) & 1;
			sextet = (sextet << 1) | b;
		}
		bytes_putc(out, alphabet[sextet]);
	}
}

/* bash's `printf %q` when the value has no control characters: a backslash
 * before each character the shell would interpret; `#` and `~` only where
 * they would start a word (so twice: the value as the whole argument, and
 * inside a longer one). Returns false (and nothing) when bash would write
 * $'...' instead. */
static bool encode_shell_backslash(struct secret_buffer *out, const char *v, size_t len,
				   bool at_start)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];
		if (c < 0x20 || c == 0x7f)
			return false;
		bool escape = strchr(" '\"\\|&;()<>!{}*[?]^$`,", c) != NULL;
		if (c == '#')
			escape = at_start && i == 0;
		if (c == '~')
			escape = (at_start && i == 0) ||
				 (i > 0 && (v[i - 1] == '=' || v[i - 1] == ':'));
		if (escape)
			bytes_putc(out, '\\');
		bytes_putc(out, (char)c);
	}
	return true;
}

/* Backslash escapes as a language's repr or a shell's $'...' write them.
 * Always \\, \t, \n, \r; ESC_C adds \a \b \f \v (C, Go, bash), ESC_BASH
 * \E for ESC; the quote escaped is ' (Python's default) or " (ESC_DQUOTE:
 * C, Go, Python when the text has a '); other control bytes and 0x7f, and
 * with ESC_HIGH bytes from 0x80 (Python's bytes, C), as \xNN or with
 * ESC_OCTAL as \NNN. ESC_ALL escapes every byte that way (`\x73\x6b...`
 * as printf and echo -e take it). */
enum escape_style {
	ESC_C = 1,
	ESC_BASH = 2,
	ESC_DQUOTE = 4,
	ESC_HIGH = 8,
	ESC_OCTAL = 16,
	ESC_UPPER = 32,
	ESC_ALL = 64,
};

static void encode_escaped(struct secret_buffer *out, const char *v, size_t len, int style)
{
	const char *hex = style & ESC_UPPER ? hex_upper : hex_lower;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];
		char named = 0;
		if (!(style & ESC_ALL)) {
			switch (c) {
			case '\\': named = '\\'; break;
			case '\t': named = 't'; break;
			case '\n': named = 'n'; break;
			case '\r': named = 'r'; break;
			case '\a': named = style & ESC_C ? 'a' : 0; break;
			case '\b': named = style & ESC_C ? 'b' : 0; break;
			case '\f': named = style & ESC_C ? 'f' : 0; break;
			case '\v': named = style & ESC_C ? 'v' : 0; break;
			case 0x1b: named = style & ESC_BASH ? 'E' : 0; break;
			case '\'': named = style & ESC_DQUOTE ? 0 : '\''; break;
			case '"': named = style & ESC_DQUOTE ? '"' : 0; break;
			}
			if (named) {
				char esc[2] = {'\\', named};
				bytes_put(out, esc, 2);
				continue;
			}
			if (c >= 0x20 && c != 0x7f && (c < 0x80 || !(style & ESC_HIGH))) {
				bytes_putc(out, (char)c);
				continue;
			}
		}
		if (style & ESC_OCTAL) {
			char esc[4] = {'\\', (char)('0' + (c >> 6)), (char)('0' + ((c >> 3) & 7)),
				       (char)('0' + (c & 7))};
			bytes_put(out, esc, 4);
		} else {
			char esc[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
			bytes_put(out, esc, 4);
		}
	}
}

static void encode_hex(struct secret_buffer *out, const char *v, size_t len, const char *digits)
{
	for (size_t i = 0; i < len; i++) {
		char pair[2] = {digits[(unsigned char)v[i] >> 4], digits[(unsigned char)v[i] & 15]};
		bytes_put(out, pair, 2);
	}
}

/* Every byte escaped takes 4 bytes a byte: done for values up to this long
 * (tokens, passwords, keys), not for the 64 KiB ones. */
#define ESCAPE_ALL_MAX 4096

static void add_escapes(struct mask_forms *forms, const char *v, size_t len)
{
	struct secret_buffer b = {0};
	for (int at_start = 0; at_start < 2; at_start++) {
		if (encode_shell_backslash(&b, v, len, at_start))
			forms_take(forms, &b);
		bytes_wipe(&b);
	}
	static const int styles[] = {
		0,
		ESC_DQUOTE,
		ESC_HIGH,
		ESC_HIGH | ESC_DQUOTE, /* Python str, bytes */
		ESC_C | ESC_DQUOTE,
		ESC_C | ESC_DQUOTE | ESC_HIGH,             /* C, Go */
		ESC_C | ESC_DQUOTE | ESC_HIGH | ESC_OCTAL, /* C with octal */
		ESC_C | ESC_BASH | ESC_OCTAL,
		ESC_C | ESC_BASH | ESC_OCTAL | ESC_HIGH, /* $'...' */
		ESC_ALL,
		ESC_ALL | ESC_UPPER,
		ESC_ALL | ESC_OCTAL, /* every byte */
	};
	for (size_t i = 0; i < sizeof styles / sizeof *styles; i++) {
		if ((styles[i] & ESC_ALL) && len > ESCAPE_ALL_MAX)
			continue;
		encode_escaped(&b, v, len, styles[i]);
		forms_take(forms, &b);
	}
}

/* Hex of the value, lower and upper case (xxd -p, Python's .hex(), sha
 * tools' style), which xxd -p wraps at 60 columns. */
static void add_hex(struct mask_forms *forms, const char *v, size_t len)
{
	struct secret_buffer b = {0};
	encode_hex(&b, v, len, hex_lower);
	forms_take_as(forms, &b, true);
	encode_hex(&b, v, len, hex_upper);
	forms_take_as(forms, &b, true);
}

static void add_encodings(struct mask_forms *forms, const char *v, size_t len)
{
	struct secret_buffer b = {0};
	forms_copy(forms, v, len);
	add_escapes(forms, v, len);
	add_hex(forms, v, len);
	static const int json_styles[] = {0, JSON_ASCII, JSON_SLASH, JSON_HTML};
	for (size_t style = 0; style < sizeof json_styles / sizeof *json_styles; style++) {
		bool ok = encode_json(&b, v, len, json_styles[style]);
		if (ok)
			forms_take(forms, &b);
		bytes_wipe(&b);
	}
	for (int style = 0; style < 16; style++) {
		encode_url(&b, v, len, (enum url_style)style);
		forms_take(forms, &b);
	}
	encode_shell_single(&b, v, len);
	forms_take(forms, &b);
	encode_shell_double(&b, v, len);
	forms_take(forms, &b);
}

/* base64 tools wrap lines (76 columns for base64(1) and MIME, 64 for PEM
 * and openssl) at places that depend on where the value sits: the cores are
 * wrapping forms, matched with line ends between their characters. */
static void add_base64(struct mask_forms *forms, const char *v, size_t len)
{
	struct secret_buffer b = {0};
	for (int align = 0; align < 3; align++)
		for (int url_safe = 0; url_safe < 2; url_safe++) {
			encode_base64_core(&b, v, len, align, url_safe);
			forms_take_as(forms, &b, true);
		}
}

void mask_forms_add_value(struct mask_forms *forms, const char *value, size_t len, bool encodings)
{
	if (!encodings) {
		forms_copy(forms, value, len);
		return;
	}
	/* Line-end variants: \n as \r\n, \r\n as \n, without trailing line ends. */
	struct secret_buffer crlf = {0}, lf = {0};
	bool has_lone_lf = false, has_crlf = false;
	for (size_t i = 0; i < len; i++) {
		if (value[i] == '\n' && (i == 0 || value[i - 1] != '\r')) {
			has_lone_lf = true;
			bytes_putc(&crlf, '\r');
		}
		if (value[i] == '\n' && i > 0 && value[i - 1] == '\r')
			has_crlf = true;
		bytes_putc(&crlf, value[i]);
		if (!(value[i] == '\r' && i + 1 < len && value[i + 1] == '\n'))
			bytes_putc(&lf, value[i]);
	}
	size_t trimmed = len;
	while (trimmed > 0 && (value[trimmed - 1] == '\n' || value[trimmed - 1] == '\r'))
		trimmed--;

	add_encodings(forms, value, len);
	add_base64(forms, value, len);
	if (has_lone_lf)
		add_encodings(forms, crlf.data, crlf.length);
	if (has_crlf)
		add_encodings(forms, lf.data, lf.length);
	if (trimmed < len && trimmed > 0) {
		add_encodings(forms, value, trimmed);
		add_base64(forms, value, trimmed);
	}
	bytes_wipe(&crlf);
	bytes_wipe(&lf);
}

static int compare_items(const void *a, const void *b)
{
	const struct mask_form_item *x = a, *y = b;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	if (x->len == 0)
		return 0;
	return memcmp(x->data, y->data, x->len);
}

static void item_wipe(struct mask_form_item *item)
{
	if (item->data) {
		explicit_bzero(item->data, item->len);
		free(item->data);
	}
	item->data = NULL;
}

void mask_forms_finish(struct mask_forms *forms, size_t min_length)
{
	if (forms->count == 0)
		return;
	qsort(forms->items, forms->count, sizeof *forms->items, compare_items);
	size_t kept = 0;
	for (size_t i = 0; i < forms->count; i++) {
		struct mask_form_item *item = &forms->items[i];
		bool duplicate = kept > 0 && compare_items(&forms->items[kept - 1], item) == 0;
		if (duplicate)
			forms->items[kept - 1].wraps |= item->wraps;
		if (item->len < min_length || duplicate) {
			item_wipe(item);
			continue;
		}
		forms->items[kept++] = *item;
	}
	forms->count = kept;
}

void mask_forms_free(struct mask_forms *forms)
{
	for (size_t i = 0; i < forms->count; i++)
		item_wipe(&forms->items[i]);
	free(forms->items);
	*forms = (struct mask_forms){0};
}
