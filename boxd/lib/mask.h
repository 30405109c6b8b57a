/* mask.h: replace secret values, and their common encodings, with "****" in
 * a stream of bytes.
 *
 * A `struct mask_set` is an immutable, reference-counted, compiled set of
 * values. For each value of 8 bytes or more it holds these forms: the raw
 * bytes; with "\n" line ends turned into "\r\n" and back; without trailing
 * line ends; JSON string escaping (cJSON, Python's ASCII-only, PHP's "\/",
 * Go's HTML-safe flavours); URL-encoding (%XX upper and lower case, space as
 * %20 or '+', '/' and !'()* kept or not); the shell single-quoted,
 * double-quoted and backslashed (`printf %q`) forms; backslash escapes as a
 * C, Go or Python repr or bash's $'...' write them (\xNN, octal, named),
 * and every byte escaped (values up to 4 KiB); hex, lower and upper case;
 * and base64 and URL-safe base64 at the three alignments a value can take
 * inside a longer base64 stream (only the characters that depend on the
 * value alone, so `echo "$S" | base64` and `base64("user:" + S)` are
 * caught, padded or not). A form shorter than 8 bytes is never masked: it
 * would blank ordinary text.
 *
 * The hex and base64 forms wrap: tools break them into lines (base64 at 76
 * or 64 columns, xxd -p at 60), so they also match with a line end ("\n" or
 * "\r\n") after any of their characters but the last, line ends at least 8
 * characters apart; the whole wrapped occurrence, line ends included,
 * becomes one "****", however short its piece on either line.
 *
 * Values are kept in locked, undumpable memory and wiped when the set is
 * freed.
 *
 * A `struct mask_stream` masks one output stream: feed it chunks as they
 * arrive, flush at the end. Every occurrence of a form becomes "****";
 * occurrences that overlap (or nest) become one "****" covering them all, so
 * the longest cover wins. A value split across chunks is still found; bytes
 * are held back only while they could still be the start of a form, so a
 * line that cannot be part of a value comes out as soon as it is fed.
 *
 * Thread safety: a set may be shared by any number of threads and streams;
 * a stream belongs to one thread at a time. */
#ifndef BOXD_MASK_H
#define BOXD_MASK_H

#include <stdbool.h>
#include <stddef.h>

#define MASK_REPLACEMENT "****"
/* Shorter forms (and values) are never masked. */
#define MASK_MIN_FORM 8

struct mask_set;
struct mask_stream;

/* Compiles `count` values (each `lens[i]` bytes; `lens` NULL means
 * NUL-terminated strings). Values shorter than MASK_MIN_FORM are ignored.
 * Returns a set with one reference; never NULL (an empty set masks nothing).
 * The caller may wipe its copies of the values afterwards. */
struct mask_set *mask_set_new(const char *const *values, const size_t *lens, size_t count);
/* The same with the raw bytes only, no encoded forms (for measurements and
 * for text already decoded). */
struct mask_set *mask_set_new_raw(const char *const *values, const size_t *lens, size_t count);
struct mask_set *mask_set_ref(struct mask_set *set);
void mask_set_unref(struct mask_set *set);

/* Number of forms the set masks (0 for an empty set), and form `i`, for tests
 * and diagnostics. */
size_t mask_set_form_count(const struct mask_set *set);
const char *mask_set_form(const struct mask_set *set, size_t i, size_t *len);
/* Whether form `i` also matches wrapped into lines (see above). */
bool mask_set_form_wraps(const struct mask_set *set, size_t i);
/* Bytes the set takes in memory (forms and index). */
size_t mask_set_memory(const struct mask_set *set);

/* Receives masked output. `len` is never 0. */
typedef void (*mask_output_fn)(void *ctx, const char *data, size_t len);

/* A stream over `set` (takes its own reference) writing to `output`. */
struct mask_stream *mask_stream_new(struct mask_set *set, mask_output_fn output, void *ctx);
/* Masks `len` bytes; writes what is decided, holds back the rest. */
void mask_stream_feed(struct mask_stream *stream, const char *data, size_t len);
/* End of stream: writes everything still held back, masked. The stream can
 * be fed again afterwards (as a new stream). */
void mask_stream_flush(struct mask_stream *stream);
/* Masks later output with `set` (bytes held back are checked against it
 * too): a value added while a command runs is masked from then on. */
void mask_stream_set_values(struct mask_stream *stream, struct mask_set *set);
/* Bytes currently held back (for tests and latency checks). */
size_t mask_stream_pending(const struct mask_stream *stream);
/* Frees the stream, dropping (and wiping) what is held back: flush first to
 * keep it. */
void mask_stream_free(struct mask_stream *stream);

/* One-shot: `text` masked, as a new NUL-terminated string (xmalloc; free()).
 * For JSON fields, steps, error messages and log lines. `set` may be NULL. */
char *mask_text(struct mask_set *set, const char *text);
/* Same for `len` bytes; `*out_len` receives the result's length. */
char *mask_bytes(struct mask_set *set, const char *data, size_t len, size_t *out_len);

#endif
