/* shim-socket.c: the control socket boxd talks to (shim-protocol.h).
 *
 * Output goes out with MSG_DONTWAIT: a slow or stuck boxd never stalls the
 * command. What does not fit is counted and reported as LOST; the log and
 * the captures keep everything. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "exit-record.h"
#include "fd-passing.h"
#include "shim-protocol.h"
#include "shim.h"
#include "text.h"
#include "xalloc.h"

bool socket_listen(struct shim *shim, char *error, size_t error_size)
{
	struct sockaddr_un address = {.sun_family = AF_UNIX};
	int n = snprintf(address.sun_path, sizeof address.sun_path, "%s/" SHIM_STATE_SOCKET,
			 shim->spec.state_dir);
	int dir = -1;
	if (n >= (int)sizeof address.sun_path) {
		/* A long state dir: reach it through a descriptor (the bound
		 * socket is the inode, whatever path reached it). */
		dir = shim->prep.state_fd >= 0
			      ? shim->prep.state_fd
			      : open(shim->spec.state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		snprintf(address.sun_path, sizeof address.sun_path, "/proc/self/fd/%d/sock", dir);
	}
	unlink(address.sun_path);
	shim->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	bool ok = shim->listen_fd >= 0 &&
		  bind(shim->listen_fd, (struct sockaddr *)&address, sizeof address) == 0 &&
		  listen(shim->listen_fd, 8) == 0;
	int saved = errno;
	if (dir >= 0 && dir != shim->prep.state_fd)
		close(dir);
	if (!ok)
		return text_fail(error, error_size, "cannot listen on %s/sock: %s",
				 shim->spec.state_dir, strerror(saved));
	for (int i = 0; i < SHIM_MAX_CLIENTS; i++)
		shim->clients[i].fd = -1;
	return true;
}

void socket_accept(struct shim *shim)
{
	int fd = accept4(shim->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	/* Only boxd's user may talk to a shim. */
	struct ucred peer;
	socklen_t size = sizeof peer;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 ||
	    (peer.uid != 0 && peer.uid != geteuid())) {
		close(fd);
		return;
	}
	int buffer = 1 << 20;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
	for (int i = 0; i < SHIM_MAX_CLIENTS; i++)
		if (shim->clients[i].fd < 0) {
			shim->clients[i] = (struct shim_client){.fd = fd};
			if (shim->recorded)
				socket_send_exit_to(shim, &shim->clients[i]);
			return;
		}
	close(fd);
}

static void client_drop(struct shim_client *client)
{
	close(client->fd);
	client->fd = -1;
}

static bool send_message(struct shim_client *client, char kind, const char *data, size_t length);

/* Sends a message that must arrive (a replay, an exit): waits for room a
 * moment when the client's buffer is full. */
static bool send_surely(struct shim_client *client, char kind, const char *data, size_t length)
{
	if (send_message(client, kind, data, length))
		return true;
	struct pollfd room = {.fd = client->fd, .events = POLLOUT};
	return client->fd >= 0 && errno == EAGAIN && poll(&room, 1, 1000) == 1 &&
	       send_message(client, kind, data, length);
}

/* Output in messages of at most SHIM_MESSAGE_MAX, waiting for room a
 * moment when `surely`; what is not sent (or follows what was not: the
 * client reads it as one gap) is counted as lost. */
static void send_pieces(struct shim_client *client, char kind, const char *data, size_t length,
			bool surely)
{
	for (size_t at = 0; at < length && client->fd >= 0;) {
		size_t n = length - at;
		if (n > SHIM_MESSAGE_MAX - 1)
			n = SHIM_MESSAGE_MAX - 1;
		bool sent = !client->lost && (surely ? send_surely(client, kind, data + at, n)
						     : send_message(client, kind, data + at, n));
		if (!sent)
			client->lost += n;
		at += n;
	}
}

/* The terminal's recent output, then the live output: nothing is written
 * between the two (the loop is this thread), so nothing is seen twice or
 * missed. What cannot be sent counts as lost, as live output does. */
static void send_replay(struct shim *shim, struct shim_client *client)
{
	char *kept = ring_copy(&shim->replay);
	size_t length = shim->replay.length;
	send_pieces(client, SHIM_MSG_REPLAYED, kept, length, true);
	explicit_bzero(kept, length);
	free(kept);
	client->subscribed = client->fd >= 0;
	shim->held_until = 0;
}

/* A copy of the command's input for boxd to write into, or why not. */
static void send_input(struct shim *shim, struct shim_client *client)
{
	if (shim->input_fd < 0 || shim->recorded) {
		const char *why = shim->recorded ? "ended the command has ended"
				  : shim->spec.stdin_stream || shim->pty_fd >= 0
					  ? "closed the command's stdin is closed"
					  : "none the command was started without an open stdin "
					    "(stdin stream or pty)";
		send_message(client, SHIM_MSG_FAILED, why, strlen(why));
		return;
	}
	const char *kind = shim->pty_fd >= 0 ? "pty" : "pipe";
	char message[8];
	message[0] = SHIM_MSG_INPUT_FD;
	memcpy(message + 1, kind, strlen(kind));
	if (!fd_passing_send_message(client->fd, shim->input_fd, message, 1 + strlen(kind),
				     MSG_DONTWAIT | MSG_NOSIGNAL))
		client_drop(client);
}

bool socket_read(struct shim *shim, int index, struct shim_request *request)
{
	struct shim_client *client = &shim->clients[index];
	/* A secrets message may be large: learn its size first. */
	ssize_t size = recv(client->fd, NULL, 0, MSG_PEEK | MSG_TRUNC);
	if (size < 0 && (errno == EINTR || errno == EAGAIN))
		return false;
	if (size <= 0 || size > (16 << 20)) {
		client_drop(client);
		return false;
	}
	char *message = xmalloc((size_t)size);
	ssize_t n = recv(client->fd, message, (size_t)size, 0);
	if (n <= 0) {
		free(message);
		client_drop(client);
		return false;
	}
	bool for_the_loop = false;
	switch (message[0]) {
	case SHIM_MSG_SUBSCRIBE:
		client->subscribed = true;
		shim->held_until = 0;
		break;
	case SHIM_MSG_REPLAY: send_replay(shim, client); break;
	case SHIM_MSG_INPUT_FD: send_input(shim, client); break;
	case SHIM_MSG_STOP:
	case SHIM_MSG_SECRETS:
	case SHIM_MSG_CLOSE_STDIN:
	case SHIM_MSG_RESIZE:
	case SHIM_MSG_SIGNAL:
		*request = (struct shim_request){message[0], xmalloc((size_t)n), (size_t)n - 1};
		memcpy(request->payload, message + 1, (size_t)n - 1);
		request->payload[n - 1] = '\0';
		for_the_loop = true;
		break;
	default: client_drop(client); /* a peer that speaks nonsense is ended */
	}
	explicit_bzero(message, (size_t)n);
	free(message);
	return for_the_loop;
}

void shim_request_free(struct shim_request *request)
{
	explicit_bzero(request->payload, request->length);
	free(request->payload);
	request->payload = NULL;
}

static bool send_message(struct shim_client *client, char kind, const char *data, size_t length)
{
	char message[SHIM_MESSAGE_MAX];
	message[0] = kind;
	if (length)
		memcpy(message + 1, data, length);
	ssize_t n = send(client->fd, message, length + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS)
		client_drop(client);
	return n == (ssize_t)length + 1;
}

static void send_lost(struct shim_client *client)
{
	char text[32];
	int n = snprintf(text, sizeof text, "%" PRIu64, client->lost);
	if (send_message(client, SHIM_MSG_LOST, text, (size_t)n))
		client->lost = 0;
}

void socket_broadcast(struct shim *shim, char kind, const char *data, size_t length)
{
	for (int i = 0; i < SHIM_MAX_CLIENTS; i++) {
		struct shim_client *client = &shim->clients[i];
		if (client->fd < 0 || !client->subscribed)
			continue;
		if (client->lost)
			send_lost(client);
		send_pieces(client, kind, data, length, false);
	}
}

void socket_send_exit_to(struct shim *shim, struct shim_client *client)
{
	if (client->lost)
		send_lost(client);
	/* The exit notice must arrive: wait briefly for room if needed. */
	send_surely(client, SHIM_MSG_EXIT, shim->exit_notice, shim->exit_notice_length);
}

void socket_send_exit(struct shim *shim)
{
	for (int i = 0; i < SHIM_MAX_CLIENTS; i++)
		if (shim->clients[i].fd >= 0)
			socket_send_exit_to(shim, &shim->clients[i]);
}
