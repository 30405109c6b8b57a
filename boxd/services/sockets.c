/* sockets.c: listening TCP sockets through NETLINK_SOCK_DIAG (sockets.h).
 *
 * Why sock_diag and not /proc/net/tcp: the dump is filtered by the kernel to
 * listeners (the proc files list every connection, which on a busy box is
 * thousands of lines to parse), and it says which "::" sockets are v6only. */
#include "sockets.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "xalloc.h"

#define TCP_LISTEN_STATE 10 /* TCP_LISTEN in the kernel's enum */

struct dump_request {
	struct nlmsghdr header;
	struct inet_diag_req_v2 request;
};

static bool send_request(int fd, int family)
{
	struct dump_request message = {
		.header = {.nlmsg_len = sizeof message,
			   .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			   .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
		.request = {.sdiag_family = (unsigned char)family,
			    .sdiag_protocol = IPPROTO_TCP,
			    /* INET_DIAG_SKV6ONLY comes with every AF_INET6
			     * socket, unasked. */
			    .idiag_states = 1u << TCP_LISTEN_STATE},
	};
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	return sendto(fd, &message, sizeof message, 0, (struct sockaddr *)&kernel, sizeof kernel) ==
	       (ssize_t)sizeof message;
}

static bool v6only_of(const struct nlmsghdr *header, const struct inet_diag_msg *message)
{
	int length = (int)header->nlmsg_len - NLMSG_LENGTH(sizeof *message);
	for (const struct rtattr *attribute = (const void *)(message + 1);
	     RTA_OK(attribute, length); attribute = RTA_NEXT(attribute, length))
		if (attribute->rta_type == INET_DIAG_SKV6ONLY &&
		    RTA_PAYLOAD(attribute) >= (int)sizeof(unsigned char))
			return *(const unsigned char *)RTA_DATA(attribute) != 0;
	return false;
}

static void append(struct listen_socket **sockets, size_t *count, size_t *capacity,
		   const struct nlmsghdr *header)
{
	const struct inet_diag_msg *message = NLMSG_DATA(header);
	if (*count == *capacity) {
		*capacity = *capacity ? *capacity * 2 : 32;
		*sockets = xrealloc(*sockets, *capacity * sizeof **sockets);
	}
	struct listen_socket *socket = &(*sockets)[(*count)++];
	memset(socket, 0, sizeof *socket);
	socket->family = message->idiag_family;
	socket->port = ntohs(message->id.idiag_sport);
	socket->inode = message->idiag_inode;
	inet_ntop(message->idiag_family, message->id.idiag_src, socket->address,
		  sizeof socket->address);
	socket->v6only = message->idiag_family == AF_INET6 && v6only_of(header, message);
}

/* Reads one family's dump to its end; false with errno on an error. */
static bool read_dump(int fd, struct listen_socket **sockets, size_t *count, size_t *capacity)
{
	static char buffer[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
	for (;;) {
		ssize_t got = recv(fd, buffer, sizeof buffer, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		/* Unsigned, as NLMSG_OK compares it with nlmsg_len. */
		unsigned length = (unsigned)got;
		for (const struct nlmsghdr *header = (const void *)buffer; NLMSG_OK(header, length);
		     header = NLMSG_NEXT(header, length)) {
			if (header->nlmsg_type == NLMSG_DONE)
				return true;
			if (header->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *error = NLMSG_DATA(header);
				errno = error->error ? -error->error : EPROTO;
				return false;
			}
			if (header->nlmsg_type == SOCK_DIAG_BY_FAMILY)
				append(sockets, count, capacity, header);
		}
	}
}

bool sockets_listening(struct listen_socket **sockets, size_t *count)
{
	*sockets = NULL;
	*count = 0;
	size_t capacity = 0;
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return false;
	bool ok = true;
	int families[] = {AF_INET, AF_INET6};
	for (size_t i = 0; ok && i < sizeof families / sizeof *families; i++)
		ok = send_request(fd, families[i]) && read_dump(fd, sockets, count, &capacity);
	int saved = errno;
	close(fd);
	if (!ok) {
		free(*sockets);
		*sockets = NULL;
		*count = 0;
		errno = saved;
	}
	return ok;
}

enum listen_reach sockets_reach(const struct listen_socket *sockets, size_t count, unsigned port)
{
	enum listen_reach reach = LISTEN_NONE;
	for (size_t i = 0; i < count; i++) {
		const struct listen_socket *s = &sockets[i];
		if (s->port != port)
			continue;
		if (s->family == AF_INET &&
		    (!strcmp(s->address, "0.0.0.0") || !strncmp(s->address, "127.", 4)))
			return LISTEN_V4;
		if (s->family == AF_INET6 && !strcmp(s->address, "::") && !s->v6only)
			return LISTEN_V4;
		if (s->family == AF_INET6 &&
		    (!strcmp(s->address, "::1") || !strcmp(s->address, "::")))
			reach = LISTEN_V6_LOOPBACK;
	}
	return reach;
}
