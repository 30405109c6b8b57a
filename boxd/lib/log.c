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

void log_msg(enum log_level level, const char *fmt, ...)
{
	if (level > max_level)
		return;
	char text[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);

	char *body = redact_text(text);
	char line[2200];
	int n = snprintf(line, sizeof line, "<%d>%s\n", (int)level, body);
	free(body);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof line)
		n = sizeof line - 1;
	/* One write per line: concurrent threads never interleave inside a line. */
	ssize_t unused = write(STDERR_FILENO, line, (size_t)n);
	(void)unused;
}
