/* shim-output.c: the path every byte of output takes.
 *
 *   pipe -> output_read -> output_mask -> output_deliver -> log, capture, boxd
 *
 * output_mask is the one place masking happens, so nothing unmasked reaches
 * the log, the captures or a socket. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "mask.h"
#include "shim-protocol.h"
#include "shim.h"
#include "utf8.h"
#include "xalloc.h"

static struct mask_set *secrets;

static void capture_add(struct shim_capture *c, const char *data, size_t length)
{
	c->total += length;
	if (!c->half)
		return;
	size_t to_head = c->half - c->head_length;
	if (to_head > length)
		to_head = length;
	memcpy(c->head + c->head_length, data, to_head);
	c->head_length += to_head;
	data += to_head;
	length -= to_head;
	ring_add(&c->tail, data, length);
}

struct delivery {
	struct shim *shim;
	struct shim_stream *stream;
};

static void output_deliver(void *context, const char *data, size_t length)
{
	struct delivery *d = context;
	log_file_write(&d->shim->log, data, length);
	capture_add(&d->stream->capture, data, length);
	ring_add(&d->shim->replay, data, length);
	socket_broadcast(d->shim, d->stream->kind, data, length);
}

static struct delivery out_delivery, err_delivery;

static void output_mask(struct shim_stream *stream, struct delivery *delivery, const char *data,
			size_t length)
{
	if (stream->masker)
		mask_stream_feed(stream->masker, data, length);
	else
		output_deliver(delivery, data, length);
}

static void stream_init(struct shim *shim, struct shim_stream *s, struct delivery *d)
{
	d->shim = shim;
	d->stream = s;
	s->capture.half = shim->spec.max_output_bytes / 2;
	if (s->capture.half) {
		s->capture.head = xmalloc(s->capture.half);
		s->capture.tail = (struct shim_ring){.data = xmalloc(s->capture.half),
						     .size = s->capture.half};
	}
	s->masker = mask_stream_new(secrets, output_deliver, d);
}

void output_init(struct shim *shim)
{
	secrets = mask_set_new((const char *const *)shim->spec.secrets, NULL,
			       shim->spec.secret_count);
	stream_init(shim, &shim->out, &out_delivery);
	stream_init(shim, &shim->err, &err_delivery);
}

void output_set_secrets(struct shim *shim, const char *values, size_t length)
{
	const char **list = NULL;
	size_t count = 0;
	for (size_t at = 0; at < length;) {
		size_t n = strnlen(values + at, length - at);
		list = xrealloc(list, (count + 1) * sizeof *list);
		list[count++] = xstrndup(values + at, n);
		at += n + 1;
	}
	struct mask_set *set = mask_set_new(list, NULL, count);
	for (size_t i = 0; i < count; i++) {
		explicit_bzero((char *)list[i], strlen(list[i]));
		free((char *)list[i]);
	}
	free(list);
	mask_stream_set_values(shim->out.masker, set);
	mask_stream_set_values(shim->err.masker, set);
	mask_set_unref(secrets);
	secrets = set;
}

char *output_mask_text(const char *text)
{
	return mask_text(secrets, text);
}

bool output_read(struct shim *shim, struct shim_stream *stream)
{
	/* As big as the pipe: one wakeup per pipeful. Untouched pages cost
	 * nothing, so a quiet command keeps its shim small. */
	static char buffer[1 << 20];
	ssize_t n = read(stream->fd, buffer, sizeof buffer);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	/* A terminal's master reads EIO once no process holds its slave: the
	 * end of its output, as EOF is a pipe's. */
	if (n <= 0) {
		close(stream->fd);
		stream->fd = -1;
		return false;
	}
	output_mask(stream, stream == &shim->out ? &out_delivery : &err_delivery, buffer,
		    (size_t)n);
	return true;
}

static bool capture_truncated(const struct shim_capture *c)
{
	/* A background command captures nothing: nothing of it was cut. */
	return c->half && c->total > c->head_length + c->tail.length;
}

bool output_truncated(const struct shim *shim)
{
	return capture_truncated(&shim->out.capture) || capture_truncated(&shim->err.capture);
}

/* A capture as its reader gets it: the head, a marker line naming what was
 * left out, the tail; never splitting a character at either cut. The three
 * pieces point into the capture (the tail into `tail`, which the caller
 * frees) and into the marker (caller frees; NULL when nothing was left out). */
struct capture_text {
	const char *head, *tail;
	size_t head_length, tail_length;
	char *marker, *tail_copy;
};

static void capture_text(struct shim *shim, const struct shim_capture *c, struct capture_text *t)
{
	*t = (struct capture_text){0};
	t->tail_copy = ring_copy(&c->tail);
	t->head = c->head;
	t->head_length = c->head_length;
	t->tail = t->tail_copy;
	t->tail_length = c->tail.length;
	if (capture_truncated(c)) {
		size_t head = utf8_prefix_length(c->head, c->head_length);
		size_t skip = utf8_skip_partial(t->tail_copy, c->tail.length);
		uint64_t omitted = c->total - head - (c->tail.length - skip);
		t->marker = xasprintf("\n[... %" PRIu64
				      " bytes omitted; the whole output is in %s ...]\n",
				      omitted, shim->log.path);
		t->head_length = head;
		t->tail += skip;
		t->tail_length -= skip;
	}
}

static size_t capture_text_length(const struct capture_text *t)
{
	return t->head_length + (t->marker ? strlen(t->marker) : 0) + t->tail_length;
}

static void capture_text_free(struct capture_text *t)
{
	free(t->marker);
	free(t->tail_copy);
}

static void capture_save(struct shim *shim, const struct shim_capture *c, const char *name)
{
	char *path = xasprintf("%s/%s", shim->spec.state_dir, name);
	int fd = io_replace_open(path, 0600);
	if (fd >= 0) {
		struct capture_text t;
		capture_text(shim, c, &t);
		bool ok = io_write_all(fd, t.head, t.head_length) &&
			  (!t.marker || io_write_all(fd, t.marker, strlen(t.marker))) &&
			  io_write_all(fd, t.tail, t.tail_length);
		capture_text_free(&t);
		io_replace_commit(fd, path, ok, 0);
	}
	free(path);
}

void output_finish(struct shim *shim)
{
	mask_stream_flush(shim->out.masker);
	mask_stream_flush(shim->err.masker);
}

bool output_captures(struct shim *shim, size_t limit, char *texts[2], size_t lengths[2])
{
	const struct shim_capture *captures[2] = {&shim->out.capture, &shim->err.capture};
	/* Both halves of both streams bound what the texts can take. */
	if (!shim->spec.max_output_bytes || captures[0]->head_length + captures[0]->tail.length +
							    captures[1]->head_length +
							    captures[1]->tail.length >
						    limit)
		return false;
	struct capture_text t[2];
	size_t total = 0;
	for (int i = 0; i < 2; i++) {
		capture_text(shim, captures[i], &t[i]);
		total += capture_text_length(&t[i]);
	}
	bool fits = total <= limit;
	for (int i = 0; i < 2; i++) {
		if (fits) {
			lengths[i] = capture_text_length(&t[i]);
			char *text = xmalloc(lengths[i] + 1), *at = text;
			memcpy(at, t[i].head, t[i].head_length);
			at += t[i].head_length;
			if (t[i].marker) {
				memcpy(at, t[i].marker, strlen(t[i].marker));
				at += strlen(t[i].marker);
			}
			memcpy(at, t[i].tail, t[i].tail_length);
			text[lengths[i]] = '\0';
			texts[i] = text;
		}
		capture_text_free(&t[i]);
	}
	return fits;
}

void output_save_captures(struct shim *shim)
{
	if (shim->spec.max_output_bytes) {
		capture_save(shim, &shim->out.capture, SHIM_STATE_STDOUT);
		capture_save(shim, &shim->err.capture, SHIM_STATE_STDERR);
	}
}
