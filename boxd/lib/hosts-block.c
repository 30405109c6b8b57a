/* hosts-block.c: boxd's blocks of a hosts file (hosts-block.h). */
#include "hosts-block.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "text.h"
#include "xalloc.h"

static char *read_file(const char *path)
{
	FILE *file = fopen(path, "re");
	if (!file)
		return xstrdup("");
	char *text = xmalloc(HOSTS_BLOCK_MAX_FILE + 1);
	size_t length = fread(text, 1, HOSTS_BLOCK_MAX_FILE, file);
	fclose(file);
	text[length] = '\0';
	return text;
}

/* `text` without the lines of the block, into `out`. */
static void strip_block(const char *text, const char *begin, const char *end, FILE *out)
{
	bool inside = false;
	for (const char *line = text; *line;) {
		size_t length = strcspn(line, "\n");
		if (!strncmp(line, begin, strlen(begin)))
			inside = true;
		if (!inside)
			fprintf(out, "%.*s\n", (int)length, line);
		if (!strncmp(line, end, strlen(end)) && length == strlen(end))
			inside = false;
		line += length + (line[length] == '\n');
	}
}

bool hosts_block_write(const char *path, const char *begin, const char *end, const char *lines,
		       char *error, size_t error_size)
{
	char *text = read_file(path);
	char *data = NULL;
	size_t length = 0;
	FILE *out = open_memstream(&data, &length);
	strip_block(text, begin, end, out);
	if (*lines)
		fprintf(out, "%s\n%s%s\n", begin, lines, end);
	fclose(out);
	free(text);
	bool ok = io_replace_file(path, data, length, 0644, 0);
	int saved = errno;
	free(data);
	if (!ok) {
		text_fail(error, error_size, "cannot replace %s: %s", path, strerror(saved));
		errno = saved;
	}
	return ok;
}
