#include "log.h"
#include "redact.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static enum log_level max_level = LOG_LEVEL_INFO;

void log_set_level(enum log_level level)
{
	max_level = level;
}

/* Lines are cut at this many bytes, after masking: cutting first could leave
 * the start of a secret that the masker no longer recognises. */
#define LINE_MAX_BYTES 4096

void log_msg(enum log_level level, const char *fmt, ...)
{
	if (level > max_level)
		return;
	char *text = NULL;
	va_list ap;
	va_start(ap, fmt);
	int length = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (length < 0)
		return;
	char *body = redact_text(text);
	free(text);
	char line[LINE_MAX_BYTES];
	int n = snprintf(line, sizeof line, "<%d>%s\n", (int)level, body);
	free(body);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof line) {
		n = sizeof line - 1;
		line[n - 1] = '\n';
	}
	/* One write per line: concurrent threads never interleave inside a line. */
	ssize_t unused = write(STDERR_FILENO, line, (size_t)n);
	(void)unused;
}
