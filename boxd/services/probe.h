/* probe.h: asking a local unix-socket service whether it answers, without
 * blocking the loop. Used for the display (the X server's setup handshake)
 * and Docker (GET /_ping), and for one short question to Docker (GET
 * /containers/json, ports-docker.c). */
#ifndef BOXD_PROBE_H
#define BOXD_PROBE_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;

struct probe_spec {
	const char *path;    /* socket path; a leading '@' means the abstract namespace */
	const void *request; /* bytes to send once connected */
	size_t request_length;
	/* Returns how many bytes make the whole answer given what has arrived
	 * (0: not known yet); the probe ends when that many have arrived. May
	 * be NULL for probe_ask(), where the server's close ends it. */
	size_t (*answer_length)(const unsigned char *data, size_t length);
	int timeout_ms;
};

/* `done` runs once on the loop: `answered` false when the socket was absent,
 * refused, closed early or timed out (`timed_out` true: a server that is
 * there but silent). `answer` is valid during the call. */
typedef void (*probe_done_fn)(void *arg, bool answered, bool timed_out, const unsigned char *answer,
			      size_t length);

void probe_run(struct event_base *base, const struct probe_spec *spec, probe_done_fn done,
	       void *arg);
/* The same for a question whose answer ends when the server closes (an
 * HTTP/1.0 answer of unknown length): `answered` when anything came before
 * the close, and at most `max_answer` bytes did (a probe_run's is 64 KiB). */
void probe_ask(struct event_base *base, const struct probe_spec *spec, size_t max_answer,
	       probe_done_fn done, void *arg);
/* Ends every probe in flight without calling its `done` (at shutdown). */
void probe_cancel_all(void);

#endif
