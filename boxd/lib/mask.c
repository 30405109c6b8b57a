/* mask.c: the compiled value set and the streaming matcher (see mask.h).
 * The encoded forms of a value are built in mask-forms.c.
 *
 * How matching stays fast: every form is at least 8 bytes long, so every
 * occurrence covers one of the 4-byte windows starting at a multiple of 5.
 * The scanner probes only those windows in a bitmap of the 4-grams found at
 * offsets 0..4 of each form's first 8 bytes (one load, one multiply, one bit
 * test per 5 bytes of input). A hit checks the up to 5 starts it could
 * belong to, first in a second bitmap of the forms' first 8 bytes, then in
 * a hash table keyed by those 8 bytes, whose entries list the forms sharing
 * that prefix, longest first. A wrapping form (base64, hex) whose first line
 * end falls in its first 8 bytes is listed under those 8 bytes too, and
 * found through the 4-grams after the line end (WRAP_BACK).
 *
 * Semantics: starts are decided in increasing order; at each start the
 * longest complete occurrence wins, and an occurrence overlapping the
 * current masked run extends it (one "****" for the whole run). A start is
 * undecided while the bytes from it to the end of input are a proper prefix
 * of some occurrence: the stream holds back from the first undecided start. */
#include "mask.h"
#include "mask-forms.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "secret-buffer.h"
#include "xalloc.h"

/* The 4-gram bitmap grows with the forms so it stays mostly empty (at most
 * one bit in 256 set: most text 4-grams miss it): at least 2^17 bits
 * (16 KiB), 64 KiB for 20 values, at most 2^22 bits (512 KiB). The key
 * bitmap keeps at most one bit in 32 set. */
#define FILTER_MIN_BITS 17
#define FILTER_MAX_BITS 22
#define FILTER_BITS_PER_GRAM 256
#define KEY_BITS_MIN 12
#define KEY_BITS_PER_KEY 32
#define STREAM_SLAB (64 * 1024)

struct mask_form {
	const char *data;
	size_t len;
	bool wraps; /* may have line ends inside (base64, hex) */
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
	size_t max_span; /* longest occurrence, line ends included */
	struct mask_form *forms;
	char *blob; /* all forms' bytes: locked, undumpable */
	size_t blob_size;
	uint32_t *order; /* form indices by (key, length descending) */
	size_t entries;  /* length of order: forms and their line-end keys */
	struct mask_slot *slots;
	uint64_t slot_mask;
	int slot_shift;
	uint32_t *first_byte[256]; /* forms by first byte, for the tail */
	uint32_t first_count[256];
	int filter_shift; /* 32 - log2(bits) */
	uint8_t *filter;
	size_t filter_size;   /* bytes */
	int keys_shift;       /* 64 - log2(bits) */
	size_t back;          /* a probe hit checks the starts this far back */
	uint8_t *key_bits;    /* the 8-byte keys, hashed: a start's first test */
	size_t key_bits_size; /* bytes */
};

/* What a scan needs besides the input: where output goes and the run. */
struct mask_scan {
	const struct mask_set *set;
	mask_output_fn output;
	void *ctx;
	uint64_t base;    /* absolute offset of the input's first byte */
	uint64_t out_off; /* output is decided up to here */
	uint64_t run_end; /* end of the last masked run */
};

struct mask_stream {
	struct mask_set *set;
	struct mask_scan scan;
	/* The held bytes; held.data[0] is the first undecided start. */
	struct secret_buffer held;
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
	bool anchored; /* the key's own 4-grams go into the filter */
};

static int compare_by_prefix(const void *a, const void *b)
{
	const struct prefix_entry *ea = a, *eb = b;
	if (ea->key != eb->key)
		return ea->key < eb->key ? -1 : 1;
	return ea->len < eb->len ? 1 : ea->len > eb->len ? -1 : 0;
}

/* A wrapping form whose first line end comes after its first j < 8
 * characters starts with other 8 bytes: it is also listed under those keys
 * (j = 1..7, "\n" and "\r\n"). A second line end comes 8 characters later at
 * the earliest, after the key.
 *
 * The filter does not get those keys' 4-grams (most hold a line end, and
 * there are 14 of them per form): such an occurrence is found through the
 * 8 characters after its first line end instead, the form's 4-grams at
 * offsets j..j+4 (up to 11), and a probe hit checks the starts up to
 * WRAP_BACK bytes before it. Only when fewer than 8 characters follow the
 * line end (a short form) does the key's own 4-grams go in. */
#define WRAP_KEYS_PER_FORM 14
#define WRAP_ANCHOR_MAX 11 /* the last form offset whose 4-gram goes in */
#define WRAP_BACK 13       /* 7 characters, "\r\n", the 5 probe offsets */

static size_t wrap_keys(const struct mask_form *f, uint64_t keys[WRAP_KEYS_PER_FORM],
			bool anchored[WRAP_KEYS_PER_FORM])
{
	size_t n = 0;
	for (size_t j = 1; j < 8 && j < f->len; j++)
		for (size_t eol = 1; eol <= 2; eol++) {
			char text[16];
			memcpy(text, f->data, j);
			memcpy(text + j, &"\r\n"[2 - eol], eol);
			memcpy(text + j + eol, f->data + j,
			       8 - j < f->len - j ? 8 - j : f->len - j);
			anchored[n] = j + 8 > f->len;
			keys[n++] = load64(text);
		}
	return n;
}

static void filter_add(struct mask_set *set, const char *gram)
{
	uint32_t h = hash4(load32(gram), set->filter_shift);
	set->filter[h >> 3] |= (uint8_t)(1u << (h & 7));
}

static void set_index(struct mask_set *set)
{
	size_t cap = set->count;
	for (size_t i = 0; i < set->count; i++)
		if (set->forms[i].wraps)
			cap += WRAP_KEYS_PER_FORM;
	struct prefix_entry *entries = xmalloc(cap * sizeof *entries);
	size_t n = 0;
	for (size_t i = 0; i < set->count; i++) {
		const struct mask_form *f = &set->forms[i];
		entries[n++] = (struct prefix_entry){load64(f->data), f->len, (uint32_t)i, true};
		if (f->wraps) {
			uint64_t keys[WRAP_KEYS_PER_FORM];
			bool anchored[WRAP_KEYS_PER_FORM];
			size_t k = wrap_keys(f, keys, anchored);
			for (size_t j = 0; j < k; j++)
				entries[n++] = (struct prefix_entry){keys[j], f->len, (uint32_t)i,
								     anchored[j]};
			set->back = WRAP_BACK;
		}
	}
	set->entries = n;
	qsort(entries, n, sizeof *entries, compare_by_prefix);
	set->order = xmalloc(n * sizeof *set->order);
	for (size_t i = 0; i < n; i++)
		set->order[i] = entries[i].index;

	size_t keys = 0;
	for (size_t i = 0; i < n; i++)
		keys += i == 0 || entries[i].key != entries[i - 1].key;
	int bits = 4;
	while ((1ull << bits) < 2 * keys)
		bits++;
	set->slot_mask = (1ull << bits) - 1;
	set->slot_shift = 64 - bits;
	set->slots = xcalloc(set->slot_mask + 1, sizeof *set->slots);
	for (size_t i = 0; i < n;) {
		uint64_t key = entries[i].key;
		size_t j = i;
		while (j < n && entries[j].key == key)
			j++;
		uint64_t h = hash8(key, set->slot_shift);
		while (set->slots[h].count)
			h = (h + 1) & set->slot_mask;
		set->slots[h] = (struct mask_slot){key, (uint32_t)i, (uint32_t)(j - i)};
		i = j;
	}

	int key_bits = KEY_BITS_MIN;
	while (key_bits < FILTER_MAX_BITS && (1ull << key_bits) < keys * KEY_BITS_PER_KEY)
		key_bits++;
	set->keys_shift = 64 - key_bits;
	set->key_bits_size = (1u << key_bits) / 8;
	set->key_bits = xcalloc(1, set->key_bits_size);
	for (size_t i = 0; i < n; i++) {
		uint64_t h = hash8(entries[i].key, set->keys_shift);
		set->key_bits[h >> 3] |= (uint8_t)(1u << (h & 7));
	}

	size_t grams = 0;
	for (size_t i = 0; i < n; i++)
		grams += entries[i].anchored ? 5 : 0;
	for (size_t i = 0; i < set->count; i++)
		grams += set->forms[i].wraps ? WRAP_ANCHOR_MAX - 4 : 0;
	int filter_bits = FILTER_MIN_BITS;
	while (filter_bits < FILTER_MAX_BITS &&
	       (1ull << filter_bits) < grams * FILTER_BITS_PER_GRAM)
		filter_bits++;
	set->filter_shift = 32 - filter_bits;
	set->filter_size = (1u << filter_bits) / 8;
	set->filter = xcalloc(1, set->filter_size);
	for (size_t i = 0; i < n; i++) {
		char d[8];
		memcpy(d, &entries[i].key, 8);
		for (int o = 0; entries[i].anchored && o <= 4; o++)
			filter_add(set, d + o);
	}
	for (size_t i = 0; i < set->count; i++) {
		const struct mask_form *f = &set->forms[i];
		for (size_t o = 5; f->wraps && o <= WRAP_ANCHOR_MAX && o + 4 <= f->len; o++)
			filter_add(set, f->data + o);
	}
	explicit_bzero(entries, cap * sizeof *entries);
	free(entries);
	for (size_t i = 0; i < set->count; i++)
		set->first_count[(uint8_t)set->forms[i].data[0]]++;
	for (int b = 0; b < 256; b++)
		if (set->first_count[b])
			set->first_byte[b] = xmalloc(set->first_count[b] * sizeof(uint32_t));
	uint32_t filled[256] = {0};
	for (size_t i = 0; i < set->count; i++) {
		uint8_t b = (uint8_t)set->forms[i].data[0];
		set->first_byte[b][filled[b]++] = (uint32_t)i;
	}
}

static struct mask_set *set_build(const char *const *values, const size_t *lens, size_t count,
				  bool encodings)
{
	struct mask_set *set = xcalloc(1, sizeof *set);
	set->refs = 1;
	set->back = 4;
	struct mask_forms forms;
	mask_forms_init(&forms);
	for (size_t i = 0; i < count; i++) {
		size_t len = lens ? lens[i] : strlen(values[i]);
		if (len >= MASK_MIN_FORM)
			mask_forms_add_value(&forms, values[i], len, encodings);
	}
	mask_forms_finish(&forms, MASK_MIN_FORM);
	set->count = forms.count;
	if (set->count == 0) {
		mask_forms_free(&forms);
		return set;
	}

	for (size_t i = 0; i < forms.count; i++)
		set->blob_size += forms.items[i].len;
	long page = 4096;
	size_t mapped = (set->blob_size + page - 1) / page * page;
	set->blob = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (set->blob == MAP_FAILED)
		abort(); /* out of memory, as xmalloc would */
	/* Best effort: an unprivileged shim may not be allowed to lock. */
	(void)mlock(set->blob, mapped);
	(void)madvise(set->blob, mapped, MADV_DONTDUMP);
	set->blob_size = mapped;

	set->forms = xmalloc(forms.count * sizeof *set->forms);
	size_t at = 0;
	for (size_t i = 0; i < forms.count; i++) {
		size_t len = forms.items[i].len;
		memcpy(set->blob + at, forms.items[i].data, len);
		set->forms[i] = (struct mask_form){set->blob + at, len, forms.items[i].wraps};
		if (len > set->max_len)
			set->max_len = len;
		/* At most one line end (2 bytes) per 8 characters, none after the last. */
		size_t span = forms.items[i].wraps ? len + 2 * (1 + (len - 2) / 8) : len;
		if (span > set->max_span)
			set->max_span = span;
		at += len;
	}
	mask_forms_free(&forms);
	set_index(set);
	return set;
}

struct mask_set *mask_set_new(const char *const *values, const size_t *lens, size_t count)
{
	return set_build(values, lens, count, true);
}

struct mask_set *mask_set_new_raw(const char *const *values, const size_t *lens, size_t count)
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
	if (set->key_bits) {
		explicit_bzero(set->key_bits, set->key_bits_size);
		free(set->key_bits);
	}
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

bool mask_set_form_wraps(const struct mask_set *set, size_t i)
{
	return set->forms[i].wraps;
}

size_t mask_set_memory(const struct mask_set *set)
{
	size_t bytes = sizeof *set + set->blob_size + set->count * sizeof *set->forms +
		       set->entries * sizeof *set->order + set->filter_size + set->key_bits_size;
	if (set->slots)
		bytes += (set->slot_mask + 1) * sizeof *set->slots;
	for (int b = 0; b < 256; b++)
		bytes += set->first_count[b] * sizeof(uint32_t);
	return bytes;
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

/* A wrapping form at text[0..avail): its characters in order, with a line
 * end ("\n" or "\r\n") allowed after any of them but the last, each line
 * end at least 8 characters after the one before. Returns the occurrence's
 * length, 0 when the text ends inside a possible occurrence, -1 when there
 * is none. Form characters are never line-end bytes, so one pass decides. */
static long match_wrapping(const struct mask_form *f, const char *text, size_t avail)
{
	size_t k = 0, i = 0, piece = 0;
	bool broken = false;
	while (k < f->len) {
		if (i == avail)
			return 0;
		if (text[i] == f->data[k]) {
			i++;
			k++;
			piece++;
			continue;
		}
		if (k == 0 || (broken && piece < 8))
			return -1;
		if (text[i] == '\n') {
			i++;
		} else if (text[i] == '\r') {
			if (i + 1 == avail)
				return 0;
			if (text[i + 1] != '\n')
				return -1;
			i += 2;
		} else {
			return -1;
		}
		broken = true;
		piece = 0;
	}
	return (long)i;
}

/* Start p with at least 8 bytes available: longest complete occurrence, or
 * undecided when a form could still complete there. */
static enum start_result check_start(const struct mask_set *set, const char *buf, size_t n,
				     size_t p, bool final, size_t *len)
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
	size_t avail = n - p, best = 0;
	bool open = false;
	for (uint32_t k = 0; k < slot->count; k++) {
		const struct mask_form *f = &set->forms[set->order[slot->start + k]];
		if (f->wraps) {
			long r = match_wrapping(f, buf + p, avail);
			if (r == 0)
				open = true;
			else if (r > 0 && (size_t)r > best)
				best = (size_t)r;
		} else if (f->len > avail) {
			if (memcmp(buf + p + 8, f->data + 8, avail - 8) == 0)
				open = true;
		} else if (f->len > best && memcmp(buf + p + 8, f->data + 8, f->len - 8) == 0) {
			best = f->len;
		}
	}
	if (open && !final)
		return START_UNDECIDED;
	if (!best)
		return START_NONE;
	*len = best;
	return START_MATCH;
}

/* Start p with fewer than 8 bytes available (never final): is it a prefix? */
static bool tail_is_prefix(const struct mask_set *set, const char *buf, size_t n, size_t p)
{
	uint8_t b = (uint8_t)buf[p];
	for (uint32_t k = 0; k < set->first_count[b]; k++) {
		const struct mask_form *f = &set->forms[set->first_byte[b][k]];
		if (f->wraps ? match_wrapping(f, buf + p, n - p) == 0
			     : memcmp(f->data, buf + p, n - p) == 0)
			return true;
	}
	return false;
}

/* Checks starts [from, to) in order; true (with *stop) at an undecided one. */
static bool scan_starts(struct mask_scan *scan, const char *buf, size_t n, size_t from, size_t to,
			bool final, size_t *stop)
{
	const struct mask_set *set = scan->set;
	for (size_t p = from; p < to; p++) {
		uint64_t k = hash8(load64(buf + p), set->keys_shift);
		if (!(set->key_bits[k >> 3] & (1u << (k & 7))))
			continue;
		size_t len;
		enum start_result r = check_start(set, buf, n, p, final, &len);
		if (r == START_MATCH) {
			scan_match(scan, buf, p, len);
		} else if (r == START_UNDECIDED) {
			*stop = p;
			return true;
		}
	}
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
		size_t starts = n - 7; /* starts with 8 bytes available */
		const uint8_t *filter = set->filter;
		const int shift = set->filter_shift;
		const size_t back = set->back;
		size_t next = 0; /* starts before it are decided */
		for (size_t i = 0; i < starts + 4; i += 5) {
			uint32_t h = hash4(load32(buf + i), shift);
			if (!(filter[h >> 3] & (1u << (h & 7))))
				continue;
			size_t p = i >= back ? i - back : 0;
			if (p < next)
				p = next;
			size_t last = i < starts ? i : starts - 1;
			if (scan_starts(scan, buf, n, p, last + 1, final, &stop))
				goto done;
			next = last + 1;
		}
		/* A wrapped occurrence found through its second line (see
		 * WRAP_BACK) may start where that line is not in yet. */
		if (!final && back > 4) {
			size_t p = starts > back + 4 ? starts - back - 4 : 0;
			if (scan_starts(scan, buf, n, p > next ? p : next, starts, final, &stop))
				goto done;
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
	secret_buffer_reserve(&stream->held, need);
}

struct mask_stream *mask_stream_new(struct mask_set *set, mask_output_fn output, void *ctx)
{
	struct mask_stream *stream = xcalloc(1, sizeof *stream);
	stream->set = mask_set_ref(set);
	stream->scan = (struct mask_scan){.set = set, .output = output, .ctx = ctx};
	return stream;
}

static void stream_process(struct mask_stream *stream, bool final)
{
	if (stream->held.length == 0)
		return;
	size_t stop = scan_run(&stream->scan, stream->held.data, stream->held.length, final);
	memmove(stream->held.data, stream->held.data + stop, stream->held.length - stop);
	stream->held.length -= stop;
	stream->scan.base += stop;
}

void mask_stream_feed(struct mask_stream *stream, const char *data, size_t len)
{
	if (stream->set->count == 0 && stream->held.length == 0) {
		if (len)
			stream->scan.output(stream->scan.ctx, data, len);
		stream->scan.base += len;
		stream->scan.out_off = stream->scan.base;
		return;
	}
	stream_reserve(stream, stream->set->max_span + STREAM_SLAB);
	while (len > 0) {
		size_t n = stream->held.capacity - stream->held.length;
		if (n > len)
			n = len;
		memcpy(stream->held.data + stream->held.length, data, n);
		stream->held.length += n;
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
	stream_reserve(stream, set->max_span + STREAM_SLAB);
	stream_process(stream, false);
}

size_t mask_stream_pending(const struct mask_stream *stream)
{
	return stream->held.length;
}

void mask_stream_free(struct mask_stream *stream)
{
	if (!stream)
		return;
	secret_buffer_wipe(&stream->held);
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
	struct collect c = {.cap = len + 1};
	c.data = xmalloc(c.cap);
	if (set && set->count) {
		struct mask_scan scan = {.set = set, .output = collect_output, .ctx = &c};
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
