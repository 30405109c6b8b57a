#include "fd-passing.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

bool fd_passing_send(int channel, int fd, char tag, int flags)
{
	struct iovec part = {&tag, 1};
	union {
		char space[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} control;
	memset(&control, 0, sizeof control);
	struct msghdr message = {.msg_iov = &part, .msg_iovlen = 1,
				 .msg_control = control.space, .msg_controllen = sizeof control.space};
	struct cmsghdr *header = CMSG_FIRSTHDR(&message);
	header->cmsg_level = SOL_SOCKET;
	header->cmsg_type = SCM_RIGHTS;
	header->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(header), &fd, sizeof fd);
	return sendmsg(channel, &message, flags | MSG_NOSIGNAL) == 1;
}
