/* shim-ring.c: the newest bytes of a stream, in a ring: the tail of a
 * foreground capture, and a terminal's recent output for a replay. */
#include <string.h>

#include "shim.h"
#include "xalloc.h"

void ring_add(struct shim_ring *ring, const char *data, size_t length)
{
	if (!ring->data || !ring->size)
		return;
	if (length >= ring->size) { /* only the newest `size` bytes matter */
		data += length - ring->size;
		length = ring->size;
	}
	while (length) {
		size_t end = (ring->start + ring->length) % ring->size;
		size_t room = ring->size - end;
		size_t n = length < room ? length : room;
		memcpy(ring->data + end, data, n);
		data += n;
		length -= n;
		if (ring->length + n > ring->size) {
			ring->start = (ring->start + ring->length + n - ring->size) % ring->size;
			ring->length = ring->size;
		} else {
			ring->length += n;
		}
	}
}

char *ring_copy(const struct shim_ring *ring)
{
	char *copy = xmalloc(ring->length + 1);
	size_t first = ring->size - ring->start;
	if (first > ring->length)
		first = ring->length;
	if (ring->length) {
		memcpy(copy, ring->data + ring->start, first);
		memcpy(copy + first, ring->data, ring->length - first);
	}
	copy[ring->length] = '\0';
	return copy;
}
