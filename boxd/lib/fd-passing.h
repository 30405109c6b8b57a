/* fd-passing.h: handing a file descriptor to another process over a unix
 * socket (SCM_RIGHTS), with one tag byte as the message. */
#ifndef BOXD_FD_PASSING_H
#define BOXD_FD_PASSING_H

#include <stdbool.h>

/* Sends `fd` with the byte `tag`; `flags` are sendmsg's (MSG_NOSIGNAL is
 * always added). True when the message went out whole. */
bool fd_passing_send(int channel, int fd, char tag, int flags);

#endif
