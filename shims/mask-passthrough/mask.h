/* mask.h (pass-through): the subset of boxd/lib/mask.h the shim uses, for a
 * tree where the masker is not built yet. It masks nothing; meson picks the
 * real one as soon as boxd/lib/mask.c exists. */
#ifndef BOXD_MASK_H
#define BOXD_MASK_H

#include <stddef.h>

struct mask_set;
struct mask_stream;
typedef void (*mask_output_fn)(void *ctx, const char *data, size_t len);

struct mask_set *mask_set_new(const char *const *values, const size_t *lens, size_t count);
void mask_set_unref(struct mask_set *set);
struct mask_stream *mask_stream_new(struct mask_set *set, mask_output_fn output, void *ctx);
void mask_stream_feed(struct mask_stream *stream, const char *data, size_t len);
void mask_stream_flush(struct mask_stream *stream);
void mask_stream_set_values(struct mask_stream *stream, struct mask_set *set);
char *mask_text(struct mask_set *set, const char *text);

#endif
