/* test-dotenv.c: dotenv parsing, named cases and malformed input. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "dotenv.h"

static const char *lookup(const struct dotenv *env, const char *name)
{
	for (size_t i = 0; i < env->count; i++)
		if (strcmp(env->entries[i].name, name) == 0)
			return env->entries[i].value;
	return NULL;
}

static void expect_value(const char *text, const char *name, const char *want)
{
	struct dotenv env;
	char error[256];
	bool ok = dotenv_parse(text, strlen(text), &env, error, sizeof error);
	CHECKF(ok, "parse of [%s] failed: %s", text, error);
	const char *got = ok ? lookup(&env, name) : NULL;
	CHECKF(got && strcmp(got, want) == 0, "[%s] %s: got [%s], want [%s]", text, name,
	       got ? got : "(none)", want);
	dotenv_free(&env);
}

static void expect_error(const char *text, const char *fragment)
{
	struct dotenv env;
	char error[256] = "";
	bool ok = dotenv_parse(text, strlen(text), &env, error, sizeof error);
	CHECKF(!ok && strstr(error, fragment), "[%s]: want an error with [%s], got %s [%s]", text,
	       fragment, ok ? "success" : "error", error);
	CHECKF(env.count == 0, "entries left after an error");
}

int main(void)
{
	expect_value("A=1", "A", "1");
	expect_value("A=plain value  # comment\n", "A", "plain value");
	expect_value("A=no#comment", "A", "no#comment");
	expect_value("export  B = spaced\n", "B", "spaced");
	expect_value("  # comment\n\nC='single $HOME \\n'  # c\n", "C", "single $HOME \\n");
	expect_value("D=\"tab\\tnl\\nq\\\"bs\\\\d\\$\\x\"", "D", "tab\tnl\nq\"bs\\d$\\x");
	expect_value("E=\"line one\nline two\"\nF=2", "E", "line one\nline two");
	expect_value("E=\"line one\nline two\"\nF=2", "F", "2");
	expect_value("G='multi\r\nline'\r\nH=x\r\n", "G", "multi\r\nline");
	expect_value("G='multi\r\nline'\r\nH=x\r\n", "H", "x");
	expect_value("I=", "I", "");
	expect_value("I=\"\"", "I", "");
	expect_value("J=1\nJ=2\n", "J", "2");
	expect_value("exported=1", "exported", "1");
	expect_value("K.dot-dash=v", "K.dot-dash", "v");
	expect_value("URL=postgres://u:p@ss@host:5432/db?x=1", "URL",
		     "postgres://u:p@ss@host:5432/db?x=1");

	expect_error("=value", "line 1: expected NAME=value");
	expect_error("A=1\nNOEQUALS\n", "line 2: expected '=' after the name NOEQUALS");
	expect_error("A=1\nB='open\n\n", "line 2: the single quote is never closed");
	expect_error("A=\"open", "line 1: the double quote is never closed");
	expect_error("A='x' trailing", "line 1: unexpected text after the closing quote");
	expect_error("1A=x", "expected NAME=value");
	struct dotenv env;
	char error[256] = "";
	CHECKF(!dotenv_parse("A=x\0y", 5, &env, error, sizeof error) && strstr(error, "NUL"),
	       "NUL: %s", error);

	CHECKF(dotenv_is_secret("API_KEY", "x"), "API_KEY");
	CHECKF(dotenv_is_secret("db_password", "x"), "db_password");
	CHECKF(dotenv_is_secret("SENTRY_DSN", "x"), "SENTRY_DSN");
	CHECKF(!dotenv_is_secret("PORT", "8080"), "PORT");
	CHECKF(!dotenv_is_secret("HOME_URL", "https://example.com/a:b@c"), "URL without password");
	CHECKF(dotenv_is_secret("DATABASE_URL", "postgres://app:s3cr3t-pw@db:5432/x"),
	       "URL with password");
	size_t start, len;
	const char *url = "redis://:p@ss:word@cache:6379/0";
	CHECKF(dotenv_url_password(url, &start, &len) && len == 9 &&
		       strncmp(url + start, "p@ss:word", 9) == 0,
	       "url password with @: %zu %zu", start, len);
	CHECKF(!dotenv_url_password("redis://user@cache", &start, &len), "no password");
	CHECKF(!dotenv_url_password("not a url user:pw@host", &start, &len), "not a url");

	return check_done("dotenv");
}
