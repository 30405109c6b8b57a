/* secret-buffer.h: a growable byte buffer for secret values, wiped
 * (explicit_bzero) whenever it lets memory go: when it grows into a new
 * block and when it is freed. realloc() would leave the old block's copy
 * of a secret behind in the heap. */
#ifndef BOXD_SECRET_BUFFER_H
#define BOXD_SECRET_BUFFER_H

#include <stddef.h>

struct secret_buffer {
	char *data;
	size_t length;
	size_t capacity;
};

/* Room for at least `need` bytes (the contents kept). */
void secret_buffer_reserve(struct secret_buffer *buffer, size_t need);
/* Appends `length` bytes, growing by doubling. */
void secret_buffer_append(struct secret_buffer *buffer, const void *data, size_t length);
/* Wipes and frees everything; the buffer is empty again. */
void secret_buffer_wipe(struct secret_buffer *buffer);

#endif
