#include "secret-buffer.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void secret_buffer_reserve(struct secret_buffer *buffer, size_t need)
{
	if (buffer->capacity >= need)
		return;
	char *grown = xmalloc(need);
	if (buffer->length)
		memcpy(grown, buffer->data, buffer->length);
	if (buffer->data) {
		explicit_bzero(buffer->data, buffer->capacity);
		free(buffer->data);
	}
	buffer->data = grown;
	buffer->capacity = need;
}

void secret_buffer_append(struct secret_buffer *buffer, const void *data, size_t length)
{
	if (buffer->length + length > buffer->capacity)
		secret_buffer_reserve(buffer, (buffer->length + length) * 2 + 64);
	memcpy(buffer->data + buffer->length, data, length);
	buffer->length += length;
}

void secret_buffer_wipe(struct secret_buffer *buffer)
{
	if (buffer->data) {
		explicit_bzero(buffer->data, buffer->capacity);
		free(buffer->data);
	}
	*buffer = (struct secret_buffer){0};
}
