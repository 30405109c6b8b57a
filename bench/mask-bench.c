/* mask-bench: masking throughput and per-line latency on one core.
 *   mask-bench DATA VALUES raw|all
 * DATA is the text to mask, VALUES one value per line. Prints one JSON
 * object: {"mode", "forms", "set_bytes", "bytes", "mb_per_s", "cpu_mb_per_s",
 * "line_us", "out_bytes"}: set_bytes is what the compiled set takes in
 * memory, cpu_mb_per_s counts CPU time only (the machine may be shared),
 * line_us is CPU time per line fed one at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mask.h"
#include "xalloc.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	char *data = xmalloc(*len + 1);
	if (fread(data, 1, *len, f) != *len)
		exit(2);
	data[*len] = 0;
	fclose(f);
	return data;
}

static double clock_s(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* CPU time of this (single-threaded) process: on a shared machine the wall
 * clock also counts the time spent waiting for a core. */
static double cpu_now(void)
{
	return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

static size_t out_bytes;
static void count_output(void *ctx, const char *data, size_t len)
{
	(void)ctx;
	(void)data;
	out_bytes += len;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: mask-bench DATA VALUES raw|all\n");
		return 2;
	}
	size_t len, vlen;
	char *data = slurp(argv[1], &len);
	char *vtext = slurp(argv[2], &vlen);
	const char *values[1024];
	size_t count = 0;
	for (char *line = strtok(vtext, "\n"); line && count < 1024; line = strtok(NULL, "\n"))
		values[count++] = line;
	int raw = strcmp(argv[3], "raw") == 0;
	struct mask_set *set =
		raw ? mask_set_new_raw(values, NULL, count) : mask_set_new(values, NULL, count);

	/* Throughput: 64 KiB reads, as a pipe delivers them; best of 5 passes,
	 * by the wall clock and by CPU time. */
	double best = 1e9, best_cpu = 1e9;
	for (int pass = 0; pass < 5; pass++) {
		out_bytes = 0;
		struct mask_stream *stream = mask_stream_new(set, count_output, NULL);
		double t0 = now(), c0 = cpu_now();
		for (size_t at = 0; at < len; at += 65536)
			mask_stream_feed(stream, data + at, len - at < 65536 ? len - at : 65536);
		mask_stream_flush(stream);
		double t = now() - t0, c = cpu_now() - c0;
		if (t < best)
			best = t;
		if (c < best_cpu)
			best_cpu = c;
		mask_stream_free(stream);
	}
	size_t total_out = out_bytes;

	/* Latency: one line per feed, as an interactive command writes them. */
	struct mask_stream *stream = mask_stream_new(set, count_output, NULL);
	size_t lines = 0;
	double t0 = cpu_now();
	for (char *p = data; p < data + len && lines < 200000;) {
		char *nl = memchr(p, '\n', (size_t)(data + len - p));
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(data + len - p);
		mask_stream_feed(stream, p, n);
		p += n;
		lines++;
	}
	double line_us = (cpu_now() - t0) / (double)lines * 1e6;
	mask_stream_free(stream);

	printf("{\"mode\": \"%s\", \"forms\": %zu, \"set_bytes\": %zu, \"bytes\": %zu, "
	       "\"mb_per_s\": %.0f, \"cpu_mb_per_s\": %.0f, \"line_us\": %.3f, "
	       "\"out_bytes\": %zu}\n",
	       argv[3], mask_set_form_count(set), mask_set_memory(set), len, len / best / 1e6,
	       len / best_cpu / 1e6, line_us, total_out);
	mask_set_unref(set);
	return 0;
}
