#include "xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void out_of_memory(size_t size)
{
	char line[96];
	int n = snprintf(line, sizeof line, "<2>out of memory allocating %zu bytes\n", size);
	ssize_t unused = write(STDERR_FILENO, line, (size_t)n);
	(void)unused;
	abort();
}

void *xmalloc(size_t size)
{
	void *ptr = malloc(size ? size : 1);
	if (!ptr)
		out_of_memory(size);
	return ptr;
}

void *xcalloc(size_t count, size_t size)
{
	void *ptr = calloc(count ? count : 1, size ? size : 1);
	if (!ptr)
		out_of_memory(count * size);
	return ptr;
}

void *xrealloc(void *ptr, size_t size)
{
	void *grown = realloc(ptr, size ? size : 1);
	if (!grown)
		out_of_memory(size);
	return grown;
}

char *xstrdup(const char *text)
{
	return xstrndup(text, strlen(text));
}

char *xstrndup(const char *text, size_t length)
{
	char *copy = xmalloc(length + 1);
	memcpy(copy, text, length);
	copy[length] = '\0';
	return copy;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = NULL;
	int n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		out_of_memory(strlen(fmt));
	return text;
}
