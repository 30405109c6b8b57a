#include "probe.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "xalloc.h"

/* An answer larger than this is not what a probe expects (probe_ask's
 * callers give their own bound). */
#define PROBE_MAX_ANSWER (64 * 1024)

struct probe {
	struct probe *next; /* in-flight probes, so shutdown can end them */
	struct bufferevent *bev;
	size_t (*answer_length)(const unsigned char *data, size_t length);
	bool answer_at_close;
	size_t max_answer;
	probe_done_fn done;
	void *arg;
	bool connected;
};

static struct probe *in_flight;

static void forget(struct probe *probe)
{
	for (struct probe **link = &in_flight; *link; link = &(*link)->next) {
		if (*link == probe) {
			*link = probe->next;
			return;
		}
	}
}

static void probe_finish(struct probe *probe, bool answered, bool timed_out)
{
	forget(probe);
	struct evbuffer *input = bufferevent_get_input(probe->bev);
	size_t length = evbuffer_get_length(input);
	const unsigned char *data = length ? evbuffer_pullup(input, -1) : NULL;
	probe->done(probe->arg, answered, timed_out, data, length);
	bufferevent_free(probe->bev);
	free(probe);
}

/* How many bytes make the whole answer, given what has come (0: not known). */
static size_t wanted_length(const struct probe *probe, struct evbuffer *input, size_t length)
{
	if (!probe->answer_length || !length)
		return 0;
	return probe->answer_length(evbuffer_pullup(input, -1), length);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct probe *probe = arg;
	struct evbuffer *input = bufferevent_get_input(bev);
	size_t length = evbuffer_get_length(input);
	size_t wanted = wanted_length(probe, input, length);
	if ((wanted && length >= wanted) || length > probe->max_answer)
		probe_finish(probe, wanted && length >= wanted, false);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct probe *probe = arg;
	if (what & BEV_EVENT_CONNECTED) {
		probe->connected = true;
		return;
	}
	/* EOF, error or timeout: answered only if a whole answer had come, or
	 * anything at all when the close ends the answer. */
	struct evbuffer *input = bufferevent_get_input(bev);
	size_t length = evbuffer_get_length(input);
	size_t wanted = wanted_length(probe, input, length);
	bool answered = (wanted && length >= wanted) ||
			(probe->answer_at_close && (what & BEV_EVENT_EOF) && length > 0);
	probe_finish(probe, answered, (what & BEV_EVENT_TIMEOUT) != 0);
}

static socklen_t fill_address(struct sockaddr_un *address, const char *path)
{
	memset(address, 0, sizeof *address);
	address->sun_family = AF_UNIX;
	size_t length = strlen(path);
	if (length >= sizeof address->sun_path)
		length = sizeof address->sun_path - 1;
	memcpy(address->sun_path, path, length);
	if (path[0] == '@')
		address->sun_path[0] = '\0'; /* abstract: the length, not a NUL, ends it */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length +
			   (path[0] == '@' ? 0 : 1));
}

static void start(struct event_base *base, const struct probe_spec *spec, bool answer_at_close,
		  size_t max_answer, probe_done_fn done, void *arg)
{
	struct probe *probe = xcalloc(1, sizeof *probe);
	probe->answer_length = spec->answer_length;
	probe->answer_at_close = answer_at_close;
	probe->max_answer = max_answer;
	probe->done = done;
	probe->arg = arg;
	probe->next = in_flight;
	in_flight = probe;
	probe->bev =
		bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	bufferevent_setcb(probe->bev, on_read, NULL, on_event, probe);
	struct timeval timeout = {spec->timeout_ms / 1000, (spec->timeout_ms % 1000) * 1000};
	bufferevent_set_timeouts(probe->bev, &timeout, &timeout);
	bufferevent_enable(probe->bev, EV_READ | EV_WRITE);
	bufferevent_write(probe->bev, spec->request, spec->request_length);
	struct sockaddr_un address;
	socklen_t length = fill_address(&address, spec->path);
	/* Callbacks are deferred, so even a connect that fails at once reports
	 * through on_event from the loop, never from inside this call. libevent
	 * 2.1 reports ECONNREFUSED that way but a missing socket (ENOENT) by
	 * the return value alone: without the trigger such a probe ended only
	 * at its timeout, as if a server were there and silent. */
	if (bufferevent_socket_connect(probe->bev, (struct sockaddr *)&address, (int)length) < 0)
		bufferevent_trigger_event(probe->bev, BEV_EVENT_ERROR, BEV_TRIG_DEFER_CALLBACKS);
}

void probe_run(struct event_base *base, const struct probe_spec *spec, probe_done_fn done,
	       void *arg)
{
	start(base, spec, false, PROBE_MAX_ANSWER, done, arg);
}

void probe_ask(struct event_base *base, const struct probe_spec *spec, size_t max_answer,
	       probe_done_fn done, void *arg)
{
	start(base, spec, true, max_answer, done, arg);
}

void probe_cancel_all(void)
{
	while (in_flight) {
		struct probe *probe = in_flight;
		in_flight = probe->next;
		bufferevent_free(probe->bev);
		free(probe);
	}
}
