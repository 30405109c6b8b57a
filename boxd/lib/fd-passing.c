#include "fd-passing.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "xalloc.h"

/* Room for one descriptor's control message, aligned as the kernel wants. */
union one_fd {
	char space[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

bool fd_passing_send_message(int channel, int fd, const void *data, size_t length, int flags)
{
	struct iovec part = {(void *)data, length};
	union one_fd control;
	memset(&control, 0, sizeof control);
	struct msghdr message = {.msg_iov = &part,
				 .msg_iovlen = 1,
				 .msg_control = control.space,
				 .msg_controllen = sizeof control.space};
	struct cmsghdr *header = CMSG_FIRSTHDR(&message);
	header->cmsg_level = SOL_SOCKET;
	header->cmsg_type = SCM_RIGHTS;
	header->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(header), &fd, sizeof fd);
	return sendmsg(channel, &message, flags | MSG_NOSIGNAL) == (ssize_t)length;
}

bool fd_passing_send(int channel, int fd, char tag, int flags)
{
	return fd_passing_send_message(channel, fd, &tag, 1, flags);
}

/* The descriptor a received message carries, or -1. */
static int carried_fd(struct msghdr *message)
{
	struct cmsghdr *header = CMSG_FIRSTHDR(message);
	if (!header || header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS)
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(header), sizeof fd);
	return fd;
}

int fd_passing_receive(int channel, char *tag)
{
	char byte;
	struct iovec part = {&byte, 1};
	union one_fd control;
	struct msghdr message = {.msg_iov = &part,
				 .msg_iovlen = 1,
				 .msg_control = control.space,
				 .msg_controllen = sizeof control.space};
	ssize_t n;
	do
		n = recvmsg(channel, &message, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		return -1;
	if (tag)
		*tag = byte;
	return carried_fd(&message);
}

char *fd_passing_receive_message(int channel, size_t limit, size_t *length, int *fd)
{
	*fd = -1;
	for (;;) {
		ssize_t size = recv(channel, NULL, 0, MSG_PEEK | MSG_TRUNC);
		if (size < 0 && errno == EINTR)
			continue;
		if (size <= 0 || (size_t)size > limit)
			return NULL;
		char *data = xmalloc((size_t)size + 1);
		struct iovec part = {data, (size_t)size};
		union one_fd control;
		struct msghdr message = {.msg_iov = &part,
					 .msg_iovlen = 1,
					 .msg_control = control.space,
					 .msg_controllen = sizeof control.space};
		ssize_t n = recvmsg(channel, &message, MSG_CMSG_CLOEXEC);
		if (n == size) {
			*fd = carried_fd(&message);
			data[n] = '\0';
			*length = (size_t)n;
			return data;
		}
		free(data);
		if (!(n < 0 && errno == EINTR))
			return NULL;
	}
}
