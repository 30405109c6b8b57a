/* dotenv.c: see dotenv.h for the accepted syntax. */
#include "dotenv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "secret-buffer.h"
#include "xalloc.h"

struct parser {
	const char *text;
	size_t len;
	size_t at;
	int line;
	char *error;
	size_t error_size;
};

/* A value as it is parsed: NUL-terminated, wiped as it grows. */
static void value_putc(struct secret_buffer *v, char c)
{
	if (v->length + 2 > v->capacity)
		secret_buffer_reserve(v, v->capacity * 2 + 64);
	v->data[v->length++] = c;
	v->data[v->length] = '\0';
}

static bool fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(struct parser *p, const char *fmt, ...)
{
	char message[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	snprintf(p->error, p->error_size, "line %d: %s", p->line, message);
	return false;
}

static int peek(const struct parser *p)
{
	return p->at < p->len ? (unsigned char)p->text[p->at] : -1;
}

static void skip_blanks(struct parser *p)
{
	while (peek(p) == ' ' || peek(p) == '\t')
		p->at++;
}

static bool at_line_end(const struct parser *p)
{
	int c = peek(p);
	return c < 0 || c == '\n' ||
	       (c == '\r' && p->at + 1 < p->len && p->text[p->at + 1] == '\n') ||
	       (c == '\r' && p->at + 1 == p->len);
}

static void skip_line_end(struct parser *p)
{
	if (peek(p) == '\r')
		p->at++;
	if (peek(p) == '\n') {
		p->at++;
		p->line++;
	}
}

static void skip_to_line_end(struct parser *p)
{
	while (!at_line_end(p))
		p->at++;
}

static bool is_name_char(int c, bool first)
{
	if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_')
		return true;
	return !first && ((c >= '0' && c <= '9') || c == '.' || c == '-');
}

static bool parse_quoted(struct parser *p, char quote, struct secret_buffer *v)
{
	int start_line = p->line;
	p->at++;
	for (;;) {
		int c = peek(p);
		if (c < 0) {
			p->line = start_line;
			return fail(p, "the %s quote is never closed",
				    quote == '"' ? "double" : "single");
		}
		p->at++;
		if (c == quote)
			break;
		if (c == '\n')
			p->line++;
		if (c == '\\' && quote == '"' && peek(p) >= 0) {
			int next = peek(p);
			const char *escapes = "n\nr\rt\t\\\\\"\"$$``";
			const char *hit = NULL;
			for (const char *e = escapes; *e; e += 2)
				if (*e == next)
					hit = e;
			if (hit) {
				value_putc(v, hit[1]);
				p->at++;
				continue;
			}
		}
		value_putc(v, (char)c);
	}
	skip_blanks(p);
	if (peek(p) == '#')
		skip_to_line_end(p);
	if (!at_line_end(p))
		return fail(p, "unexpected text after the closing quote");
	return true;
}

static void parse_unquoted(struct parser *p, struct secret_buffer *v)
{
	while (!at_line_end(p)) {
		int c = peek(p);
		if (c == '#' && (v->length == 0 || v->data[v->length - 1] == ' ' ||
				 v->data[v->length - 1] == '\t')) {
			skip_to_line_end(p);
			break;
		}
		value_putc(v, (char)c);
		p->at++;
	}
	while (v->length && (v->data[v->length - 1] == ' ' || v->data[v->length - 1] == '\t'))
		v->data[--v->length] = '\0';
}

static void env_set(struct dotenv *env, char *name, struct secret_buffer *v)
{
	char *value = v->data ? v->data : xstrdup("");
	*v = (struct secret_buffer){0};
	for (size_t i = 0; i < env->count; i++)
		if (strcmp(env->entries[i].name, name) == 0) {
			explicit_bzero(env->entries[i].value, strlen(env->entries[i].value));
			free(env->entries[i].value);
			env->entries[i].value = value;
			free(name);
			return;
		}
	env->entries = xrealloc(env->entries, (env->count + 1) * sizeof *env->entries);
	env->entries[env->count++] = (struct dotenv_entry){name, value};
}

static bool parse_assignment(struct parser *p, struct dotenv *env)
{
	if (p->len - p->at > 7 && strncmp(p->text + p->at, "export", 6) == 0 &&
	    (p->text[p->at + 6] == ' ' || p->text[p->at + 6] == '\t')) {
		p->at += 6;
		skip_blanks(p);
	}
	size_t name_start = p->at;
	if (!is_name_char(peek(p), true))
		return fail(p, "expected NAME=value");
	while (is_name_char(peek(p), false))
		p->at++;
	size_t name_len = p->at - name_start;
	skip_blanks(p);
	if (peek(p) != '=')
		return fail(p, "expected '=' after the name %.*s",
			    (int)(name_len > 64 ? 64 : name_len), p->text + name_start);
	p->at++;
	skip_blanks(p);
	struct secret_buffer v = {0};
	bool ok = true;
	if (peek(p) == '\'' || peek(p) == '"')
		ok = parse_quoted(p, (char)peek(p), &v);
	else
		parse_unquoted(p, &v);
	if (!ok) {
		secret_buffer_wipe(&v);
		return false;
	}
	env_set(env, xstrndup(p->text + name_start, name_len), &v);
	return true;
}

bool dotenv_parse(const char *text, size_t len, struct dotenv *env, char *error, size_t error_size)
{
	*env = (struct dotenv){0};
	struct parser p = {text, len, 0, 1, error, error_size};
	if (memchr(text, '\0', len)) {
		snprintf(error, error_size, "the text holds a NUL byte; dotenv text is plain text");
		return false;
	}
	while (p.at < p.len) {
		skip_blanks(&p);
		if (peek(&p) == '#')
			skip_to_line_end(&p);
		if (!at_line_end(&p) && !parse_assignment(&p, env)) {
			dotenv_free(env);
			return false;
		}
		skip_line_end(&p);
	}
	return true;
}

void dotenv_free(struct dotenv *env)
{
	for (size_t i = 0; i < env->count; i++) {
		free(env->entries[i].name);
		explicit_bzero(env->entries[i].value, strlen(env->entries[i].value));
		free(env->entries[i].value);
	}
	free(env->entries);
	*env = (struct dotenv){0};
}

bool dotenv_url_password(const char *value, size_t *start, size_t *len)
{
	const char *scheme_end = strstr(value, "://");
	if (!scheme_end || scheme_end == value)
		return false;
	for (const char *c = value; c < scheme_end; c++)
		if (!is_name_char((unsigned char)*c, false) && *c != '+')
			return false;
	const char *authority = scheme_end + 3;
	size_t authority_len = strcspn(authority, "/?#");
	/* The last '@' of the authority ends the user info (passwords may hold '@'). */
	const char *at = NULL;
	for (const char *c = authority; c < authority + authority_len; c++)
		if (*c == '@')
			at = c;
	if (!at)
		return false;
	const char *colon = memchr(authority, ':', (size_t)(at - authority));
	if (!colon || colon + 1 == at)
		return false;
	*start = (size_t)(colon + 1 - value);
	*len = (size_t)(at - colon - 1);
	return true;
}

bool dotenv_is_secret(const char *name, const char *value)
{
	static const char *const words[] = {
		"KEY", "SECRET", "TOKEN", "PASSWORD", "PASS", "PWD", "CREDENTIAL", "PRIVATE", "DSN",
	};
	for (size_t i = 0; i < sizeof words / sizeof *words; i++)
		if (strcasestr(name, words[i]))
			return true;
	size_t start, len;
	return dotenv_url_password(value, &start, &len);
}
