/* mask.c: the compiled value set and the streaming matcher (see mask.h).
 * The encoded forms of a value are built in mask-forms.c.
 *
 * How matching stays fast: every form is at least 8 bytes long, so every
 * occurrence covers one of the 4-byte windows starting at a multiple of 5.
 * The scanner probes only those windows in a bitmap of the 4-grams found at
 * offsets 0..4 of each form's first 8 bytes (one load, one multiply, one bit
 * test per 5 bytes of input). A hit checks the up to 5 starts it could
 * belong to in a hash table keyed by the form's first 8 bytes, whose entries
 * list the forms sharing that prefix, longest first.
 *
 * Semantics: starts are decided in increasing order; at each start the
 * longest complete form wins, and an occurrence overlapping the current
 * masked run extends it (one "****" for the whole run). A start is undecided
 * while the bytes from it to the end of input are a proper prefix of some
 * form: the stream holds back from the first undecided start. */
#include "mask.h"
#include "mask-forms.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "xalloc.h"

/* The 4-gram bitmap grows with the forms so it stays mostly empty: at least
 * 2^17 bits (16 KiB, in L1), at most 2^22. */
#define FILTER_MIN_BITS 17
#define FILTER_MAX_BITS 22
#define STREAM_SLAB (64 * 1024)

struct mask_form {
	const char *data;
	size_t len;
};

/* Forms sharing the first 8 bytes `key`: order[start .. start+count). */
struct mask_slot {
	uint64_t key;
	uint32_t start;
	uint32_t count;
};

struct mask_set {
	int refs;
	size_t count;
	size_t max_len;
	struct mask_form *forms;
	char *blob;		/* all forms' bytes: locked, undumpable */
	size_t blob_size;
	uint32_t *order;	/* form indices by (prefix, length descending) */
	struct mask_slot *slots;
	uint64_t slot_mask;
	int slot_shift;
	uint32_t *first_byte[256];	/* forms by first byte, for the tail */
	uint32_t first_count[256];
	int filter_shift;	/* 32 - log2(bits) */
	uint8_t *filter;
	size_t filter_size;	/* bytes */
};

/* What a scan needs besides the input: where output goes and the run. */
struct mask_scan {
	const struct mask_set *set;
	mask_output_fn output;
	void *ctx;
	uint64_t base;		/* absolute offset of the input's first byte */
	uint64_t out_off;	/* output is decided up to here */
	uint64_t run_end;	/* end of the last masked run */
};

struct mask_stream {
	struct mask_set *set;
	struct mask_scan scan;
	char *buf;		/* held bytes; buf[0] is the first undecided start */
	size_t len;
	size_t cap;
};

static inline uint32_t load32(const char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t load64(const char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t hash4(uint32_t v, int shift)
{
	return (v * 0x9E3779B1u) >> shift;
}

static inline uint64_t hash8(uint64_t v, int shift)
{
	return (v * 0x9E3779B97F4A7C15ull) >> shift;
}

/* ---- the set ---- */

struct prefix_entry {
	uint64_t key;
	size_t len;
	uint32_t index;
};

static int compare_by_prefix(const void *a, const void *b)
{
	const struct prefix_entry *ea = a, *eb = b;
	if (ea->key != eb->key)
		return ea->key < eb->key ? -1 : 1;
	return ea->len < eb->len ? 1 : ea->len > eb->len ? -1 : 0;
}

static void set_index(struct mask_set *set)
{
	struct prefix_entry *entries = xmalloc(set->count * sizeof *entries);
	for (size_t i = 0; i < set->count; i++)
		entries[i] = (struct prefix_entry){ load64(set->forms[i].data),
						    set->forms[i].len, (uint32_t)i };
	qsort(entries, set->count, sizeof *entries, compare_by_prefix);
	set->order = xmalloc(set->count * sizeof *set->order);
	for (size_t i = 0; i < set->count; i++)
		set->order[i] = entries[i].index;
	explicit_bzero(entries, set->count * sizeof *entries);
	free(entries);

	int bits = 4;
	while ((1ull << bits) < 2 * set->count)
		bits++;
	set->slot_mask = (1ull << bits) - 1;
	set->slot_shift = 64 - bits;
	set->slots = xcalloc(set->slot_mask + 1, sizeof *set->slots);
	for (size_t i = 0; i < set->count;) {
		uint64_t key = load64(set->forms[set->order[i]].data);
		size_t j = i;
		while (j < set->count && load64(set->forms[set->order[j]].data) == key)
			j++;
		uint64_t h = hash8(key, set->slot_shift);
		while (set->slots[h].count)
			h = (h + 1) & set->slot_mask;
		set->slots[h] = (struct mask_slot){ key, (uint32_t)i, (uint32_t)(j - i) };
		i = j;
	}

	int filter_bits = FILTER_MIN_BITS;
	while (filter_bits < FILTER_MAX_BITS && (1ull << filter_bits) < set->count * 5 * 16)
		filter_bits++;
	set->filter_shift = 32 - filter_bits;
	set->filter_size = (1u << filter_bits) / 8;
	set->filter = xcalloc(1, set->filter_size);
	for (size_t i = 0; i < set->count; i++) {
		const char *d = set->forms[i].data;
		for (int o = 0; o <= 4; o++) {
			uint32_t h = hash4(load32(d + o), set->filter_shift);
			set->filter[h >> 3] |= (uint8_t)(1u << (h & 7));
		}
		set->first_count[(uint8_t)d[0]]++;
	}
	for (int b = 0; b < 256; b++)
		if (set->first_count[b])
			set->first_byte[b] = xmalloc(set->first_count[b] * sizeof(uint32_t));
	uint32_t filled[256] = { 0 };
	for (size_t i = 0; i < set->count; i++) {
		uint8_t b = (uint8_t)set->forms[i].data[0];
		set->first_byte[b][filled[b]++] = (uint32_t)i;
	}
}

static struct mask_set *set_build(const char *const *values, const size_t *lens,
				   size_t count, bool encodings)
{
	struct mask_set *set = xcalloc(1, sizeof *set);
	set->refs = 1;
	struct mask_forms forms;
	mask_forms_init(&forms);
	for (size_t i = 0; i < count; i++) {
		size_t len = lens ? lens[i] : strlen(values[i]);
		if (len >= MASK_MIN_FORM)
			mask_forms_add_value(&forms, values[i], len, encodings);
	}
	mask_forms_finish(&forms);
	set->count = forms.count;
	if (set->count == 0) {
		mask_forms_free(&forms);
		return set;
	}

	for (size_t i = 0; i < forms.count; i++)
		set->blob_size += forms.items[i].len;
	long page = 4096;
	size_t mapped = (set->blob_size + page - 1) / page * page;
	set->blob = mmap(NULL, mapped, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (set->blob == MAP_FAILED)
		abort();	/* out of memory, as xmalloc would */
	/* Best effort: an unprivileged shim may not be allowed to lock. */
	(void)mlock(set->blob, mapped);
	(void)madvise(set->blob, mapped, MADV_DONTDUMP);
	set->blob_size = mapped;

	set->forms = xmalloc(forms.count * sizeof *set->forms);
	size_t at = 0;
	for (size_t i = 0; i < forms.count; i++) {
		memcpy(set->blob + at, forms.items[i].data, forms.items[i].len);
		set->forms[i] = (struct mask_form){ set->blob + at, forms.items[i].len };
		if (forms.items[i].len > set->max_len)
			set->max_len = forms.items[i].len;
		at += forms.items[i].len;
	}
	mask_forms_free(&forms);
	set_index(set);
	return set;
}

struct mask_set *mask_set_new(const char *const *values, const size_t *lens,
			      size_t count)
{
	return set_build(values, lens, count, true);
}

struct mask_set *mask_set_new_raw(const char *const *values, const size_t *lens,
				  size_t count)
{
	return set_build(values, lens, count, false);
}

struct mask_set *mask_set_ref(struct mask_set *set)
{
	__atomic_add_fetch(&set->refs, 1, __ATOMIC_RELAXED);
	return set;
}

void mask_set_unref(struct mask_set *set)
{
	if (!set || __atomic_sub_fetch(&set->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	if (set->blob) {
		explicit_bzero(set->blob, set->blob_size);
		munlock(set->blob, set->blob_size);
		munmap(set->blob, set->blob_size);
	}
	/* The index holds 8-byte prefixes and 4-gram traces of the values. */
	if (set->slots)
		explicit_bzero(set->slots, (set->slot_mask + 1) * sizeof *set->slots);
	if (set->filter) {
		explicit_bzero(set->filter, set->filter_size);
		free(set->filter);
	}
	for (int b = 0; b < 256; b++)
		free(set->first_byte[b]);
	free(set->slots);
	free(set->order);
	free(set->forms);
	free(set);
}

size_t mask_set_form_count(const struct mask_set *set)
{
	return set->count;
}

const char *mask_set_form(const struct mask_set *set, size_t i, size_t *len)
{
	*len = set->forms[i].len;
	return set->forms[i].data;
}

/* ---- the scanner ---- */

static void scan_emit_plain(struct mask_scan *scan, const char *buf, uint64_t upto)
{
	if (scan->out_off < upto)
		scan->output(scan->ctx, buf + (scan->out_off - scan->base),
			     (size_t)(upto - scan->out_off));
	if (scan->out_off < upto)
		scan->out_off = upto;
}

/* A complete occurrence of `len` bytes at buf[p]. */
static void scan_match(struct mask_scan *scan, const char *buf, size_t p, size_t len)
{
	uint64_t start = scan->base + p, end = start + len;
	if (start < scan->run_end) {
		if (end > scan->run_end)
			scan->run_end = scan->out_off = end;
		return;
	}
	scan_emit_plain(scan, buf, start);
	scan->output(scan->ctx, MASK_REPLACEMENT, sizeof MASK_REPLACEMENT - 1);
	scan->run_end = scan->out_off = end;
}

enum start_result { START_NONE, START_MATCH, START_UNDECIDED };

/* Start p with at least 8 bytes available: longest complete form, or
 * undecided when a longer form could still complete. */
static enum start_result check_start(const struct mask_set *set, const char *buf,
				     size_t n, size_t p, bool final, size_t *len)
{
	uint64_t key = load64(buf + p);
	uint64_t h = hash8(key, set->slot_shift);
	const struct mask_slot *slot;
	for (;; h = (h + 1) & set->slot_mask) {
		slot = &set->slots[h];
		if (!slot->count)
			return START_NONE;
		if (slot->key == key)
			break;
	}
	size_t avail = n - p;
	for (uint32_t k = 0; k < slot->count; k++) {
		const struct mask_form *f = &set->forms[set->order[slot->start + k]];
		if (f->len > avail) {
			if (!final && memcmp(buf + p + 8, f->data + 8, avail - 8) == 0)
				return START_UNDECIDED;
			continue;
		}
		if (memcmp(buf + p + 8, f->data + 8, f->len - 8) == 0) {
			*len = f->len;
			return START_MATCH;
		}
	}
	return START_NONE;
}

/* Start p with fewer than 8 bytes available (never final): is it a prefix? */
static bool tail_is_prefix(const struct mask_set *set, const char *buf, size_t n, size_t p)
{
	uint8_t b = (uint8_t)buf[p];
	for (uint32_t k = 0; k < set->first_count[b]; k++)
		if (memcmp(set->forms[set->first_byte[b][k]].data, buf + p, n - p) == 0)
			return true;
	return false;
}

/* Decides starts of buf[0..n) in order; returns the first undecided one
 * (n when all are decided). Writes decided output before it. */
static size_t scan_run(struct mask_scan *scan, const char *buf, size_t n, bool final)
{
	const struct mask_set *set = scan->set;
	size_t stop = n;
	if (set->count == 0)
		goto done;
	if (n >= 8) {
		size_t starts = n - 7;		/* starts with 8 bytes available */
		const uint8_t *filter = set->filter;
		const int shift = set->filter_shift;
		for (size_t i = 0; i < starts + 4; i += 5) {
			uint32_t h = hash4(load32(buf + i), shift);
			if (!(filter[h >> 3] & (1u << (h & 7))))
				continue;
			size_t p = i >= 4 ? i - 4 : 0;
			size_t last = i < starts ? i : starts - 1;
			for (; p <= last; p++) {
				size_t len;
				enum start_result r = check_start(set, buf, n, p, final, &len);
				if (r == START_MATCH)
					scan_match(scan, buf, p, len);
				else if (r == START_UNDECIDED) {
					stop = p;
					goto done;
				}
			}
		}
	}
	if (!final)
		for (size_t p = n >= 7 ? n - 7 : 0; p < n; p++)
			if (tail_is_prefix(set, buf, n, p)) {
				stop = p;
				break;
			}
done:
	scan_emit_plain(scan, buf, scan->base + stop);
	return stop;
}

/* ---- streams ---- */

static void stream_reserve(struct mask_stream *stream, size_t need)
{
	if (stream->cap >= need)
		return;
	char *grown = xmalloc(need);
	if (stream->len)
		memcpy(grown, stream->buf, stream->len);
	if (stream->buf) {
		explicit_bzero(stream->buf, stream->cap);
		free(stream->buf);
	}
	stream->buf = grown;
	stream->cap = need;
}

struct mask_stream *mask_stream_new(struct mask_set *set,
				    mask_output_fn output, void *ctx)
{
	struct mask_stream *stream = xcalloc(1, sizeof *stream);
	stream->set = mask_set_ref(set);
	stream->scan = (struct mask_scan){ .set = set, .output = output, .ctx = ctx };
	return stream;
}

static void stream_process(struct mask_stream *stream, bool final)
{
	if (stream->len == 0)
		return;
	size_t stop = scan_run(&stream->scan, stream->buf, stream->len, final);
	memmove(stream->buf, stream->buf + stop, stream->len - stop);
	stream->len -= stop;
	stream->scan.base += stop;
}

void mask_stream_feed(struct mask_stream *stream, const char *data, size_t len)
{
	if (stream->set->count == 0 && stream->len == 0) {
		if (len)
			stream->scan.output(stream->scan.ctx, data, len);
		stream->scan.base += len;
		stream->scan.out_off = stream->scan.base;
		return;
	}
	stream_reserve(stream, stream->set->max_len + STREAM_SLAB);
	while (len > 0) {
		size_t n = stream->cap - stream->len;
		if (n > len)
			n = len;
		memcpy(stream->buf + stream->len, data, n);
		stream->len += n;
		data += n;
		len -= n;
		stream_process(stream, false);
	}
}

void mask_stream_flush(struct mask_stream *stream)
{
	stream_process(stream, true);
}

void mask_stream_set_values(struct mask_stream *stream, struct mask_set *set)
{
	mask_set_ref(set);
	mask_set_unref(stream->set);
	stream->set = set;
	stream->scan.set = set;
	stream_reserve(stream, set->max_len + STREAM_SLAB);
	stream_process(stream, false);
}

size_t mask_stream_pending(const struct mask_stream *stream)
{
	return stream->len;
}

void mask_stream_free(struct mask_stream *stream)
{
	if (!stream)
		return;
	if (stream->buf) {
		explicit_bzero(stream->buf, stream->cap);
		free(stream->buf);
	}
	mask_set_unref(stream->set);
	free(stream);
}

/* ---- one-shot ---- */

struct collect {
	char *data;
	size_t len;
	size_t cap;
};

static void collect_output(void *ctx, const char *data, size_t len)
{
	struct collect *c = ctx;
	if (c->len + len + 1 > c->cap) {
		c->cap = (c->len + len + 1) * 2;
		c->data = xrealloc(c->data, c->cap);
	}
	memcpy(c->data + c->len, data, len);
	c->len += len;
}

char *mask_bytes(struct mask_set *set, const char *data, size_t len, size_t *out_len)
{
	struct collect c = { .cap = len + 1 };
	c.data = xmalloc(c.cap);
	if (set && set->count) {
		struct mask_scan scan = { .set = set, .output = collect_output, .ctx = &c };
		scan_run(&scan, data, len, true);
	} else if (len) {
		collect_output(&c, data, len);
	}
	c.data[c.len] = '\0';
	if (out_len)
		*out_len = c.len;
	return c.data;
}

char *mask_text(struct mask_set *set, const char *text)
{
	return mask_bytes(set, text, strlen(text), NULL);
}
