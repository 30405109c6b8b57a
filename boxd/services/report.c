#include "report.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <linux/vm_sockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "health.h"
#include "log.h"
#include "redact-json.h"
#include "text.h"
#include "xalloc.h"

#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 30000
/* A peer that stops reading is dropped rather than let boxd buffer forever. */
#define MAX_UNSENT_BYTES (1u << 20)

static struct sockaddr_storage peer_address;
static socklen_t peer_length;
static char *peer_name;
static int interval_sec;
static struct bufferevent *connection;
static struct event_base *loop; /* given at report_start */
static bool connected, ready_sent;
/* An init came (claim, thaw, restore): the next event says "thawed". */
static bool thawed_pending;
static int backoff_ms = BACKOFF_FIRST_MS;
static struct event *retry_timer, *interval_timer;
/* Collections in flight hold this generation; a reconnect makes them stale. */
static unsigned generation;

static bool parse_address(const char *address, char *error, size_t error_size)
{
	memset(&peer_address, 0, sizeof peer_address);
	if (strncmp(address, "unix:", 5) == 0) {
		struct sockaddr_un *un = (struct sockaddr_un *)&peer_address;
		const char *path = address + 5;
		if (!*path || strlen(path) >= sizeof un->sun_path)
			return text_fail(error, error_size,
					 "--report unix:PATH needs a path shorter than %zu bytes",
					 sizeof un->sun_path);
		un->sun_family = AF_UNIX;
		strcpy(un->sun_path, path);
		peer_length = sizeof *un;
		return true;
	}
	unsigned cid, port;
	char extra;
	if (sscanf(address, "vsock:%u:%u%c", &cid, &port, &extra) == 2) {
		struct sockaddr_vm *vm = (struct sockaddr_vm *)&peer_address;
		vm->svm_family = AF_VSOCK;
		vm->svm_cid = cid;
		vm->svm_port = port;
		peer_length = sizeof *vm;
		return true;
	}
	return text_fail(error, error_size, "--report takes vsock:CID:PORT or unix:PATH, not `%s`",
			 address);
}

static void write_event(const char *event, cJSON *health)
{
	cJSON *line = cJSON_CreateObject();
	cJSON_AddStringToObject(line, "event", event);
	/* Move the health fields after "event", keeping their order. */
	while (health->child) {
		cJSON *item = cJSON_DetachItemViaPointer(health, health->child);
		cJSON_AddItemToObject(line, item->string, cJSON_Duplicate(item, true));
		cJSON_Delete(item);
	}
	cJSON_Delete(health);
	redact_json(line);
	char *text = cJSON_PrintUnformatted(line);
	cJSON_Delete(line);
	struct evbuffer *output = bufferevent_get_output(connection);
	evbuffer_add(output, text, strlen(text));
	evbuffer_add(output, "\n", 1);
	free(text);
}

static void drop_connection(const char *why);

static void on_health(cJSON *health, void *arg)
{
	unsigned sent_generation = (unsigned)(uintptr_t)arg;
	if (!connected || sent_generation != generation) {
		cJSON_Delete(health);
		return;
	}
	const char *event = !ready_sent ? "ready" : thawed_pending ? "thawed" : "health";
	if (ready_sent)
		thawed_pending = false;
	write_event(event, health);
	ready_sent = true;
	if (evbuffer_get_length(bufferevent_get_output(connection)) > MAX_UNSENT_BYTES)
		drop_connection("it stopped reading");
}

void report_event(const char *event, cJSON *fields)
{
	if (!connected || !ready_sent) {
		cJSON_Delete(fields);
		return;
	}
	write_event(event, fields);
	if (evbuffer_get_length(bufferevent_get_output(connection)) > MAX_UNSENT_BYTES)
		drop_connection("it stopped reading");
}

static void send_health(void)
{
	if (connected)
		health_collect(on_health, (void *)(uintptr_t)generation);
}

static void connect_now(void);

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	connect_now();
}

static void on_interval(evutil_socket_t fd, short what, void *arg)
{
	send_health();
}

static void schedule_retry(void)
{
	struct timeval delay = {backoff_ms / 1000, (backoff_ms % 1000) * 1000};
	event_add(retry_timer, &delay);
	backoff_ms = backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff_ms * 2;
}

static void drop_connection(const char *why)
{
	if (connected)
		log_msg(LOG_LEVEL_WARNING, "report peer %s went away (%s); reconnecting", peer_name,
			why);
	connected = false;
	generation++;
	event_del(interval_timer);
	if (connection) {
		bufferevent_free(connection);
		connection = NULL;
	}
	schedule_retry();
}

static void on_peer_event(struct bufferevent *bev, short what, void *arg)
{
	if (what & BEV_EVENT_CONNECTED) {
		connected = true;
		backoff_ms = BACKOFF_FIRST_MS;
		log_msg(LOG_LEVEL_INFO, "reporting health to %s every %d s", peer_name,
			interval_sec);
		struct timeval period = {interval_sec, 0};
		event_add(interval_timer, &period);
		send_health();
		return;
	}
	drop_connection(what & BEV_EVENT_EOF ? "closed" : strerror(errno));
}

static void on_peer_read(struct bufferevent *bev, void *arg)
{
	/* The peer has nothing to say to boxd; what it sends is discarded. */
	struct evbuffer *input = bufferevent_get_input(bev);
	evbuffer_drain(input, evbuffer_get_length(input));
}

static void connect_now(void)
{
	/* Made here rather than by libevent, which would leave it open across
	 * exec: every shim started while it is open would hold the connection
	 * too, and a peer would never see boxd drop it. */
	int fd = socket(peer_address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		/* The socket could not even be made (no vsock here): retry later. */
		schedule_retry();
		return;
	}
	connection =
		bufferevent_socket_new(loop, fd, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	bufferevent_setcb(connection, on_peer_read, NULL, on_peer_event, NULL);
	bufferevent_enable(connection, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(connection, (struct sockaddr *)&peer_address,
				       (int)peer_length) != 0) {
		bufferevent_free(connection);
		connection = NULL;
		schedule_retry();
	}
}

bool report_start(struct event_base *base, const char *address, int interval, char *error,
		  size_t error_size)
{
	loop = base;
	if (!parse_address(address, error, error_size))
		return false;
	peer_name = xstrdup(address);
	interval_sec = interval;
	retry_timer = evtimer_new(loop, on_retry, NULL);
	interval_timer = event_new(loop, -1, EV_PERSIST, on_interval, NULL);
	connect_now();
	return true;
}

void report_now(void)
{
	send_health();
}

void report_thawed(void)
{
	if (!peer_name)
		return;
	thawed_pending = true;
	/* The old connection may look alive and lead nowhere (a restored box's
	 * vsock connections are gone): a new one, now, without backoff. */
	if (connection)
		bufferevent_free(connection);
	connection = NULL;
	connected = false;
	generation++;
	event_del(interval_timer);
	event_del(retry_timer);
	backoff_ms = BACKOFF_FIRST_MS;
	log_msg(LOG_LEVEL_INFO, "init after a thaw or restore: reconnecting to %s", peer_name);
	connect_now();
}

void report_stop(void)
{
	if (!peer_name)
		return;
	if (connection)
		bufferevent_free(connection);
	event_free(retry_timer);
	event_free(interval_timer);
	free(peer_name);
	connection = NULL;
	peer_name = NULL;
	connected = false;
}
