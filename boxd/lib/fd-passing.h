/* fd-passing.h: handing a file descriptor to another process over a unix
 * socket (SCM_RIGHTS): one message (its first byte the type, in boxd's
 * protocols) with the descriptor, sent and received. The one home of
 * SCM_RIGHTS for boxd, its shims and its workers. */
#ifndef BOXD_FD_PASSING_H
#define BOXD_FD_PASSING_H

#include <stdbool.h>
#include <stddef.h>

/* Sends `fd` with the message `data` (`length` bytes, at least 1); `flags`
 * are sendmsg's (MSG_NOSIGNAL is always added). True when the message went
 * out whole. */
bool fd_passing_send_message(int channel, int fd, const void *data, size_t length, int flags);
/* The same with the one byte `tag` as the message. */
bool fd_passing_send(int channel, int fd, char tag, int flags);
/* Receives one message of one byte and its descriptor (blocking, retried
 * across EINTR): the descriptor (close-on-exec), its byte in *tag when
 * `tag` is not NULL; -1 at the end, or for a message that is not so. */
int fd_passing_receive(int channel, char *tag);
/* Receives one whole message of at most `limit` bytes (a SOCK_SEQPACKET
 * or datagram socket) and the descriptor it may carry (*fd, else -1): the
 * message NUL-terminated (caller frees), `*length` its bytes. NULL at the
 * end, on an error or past the limit. */
char *fd_passing_receive_message(int channel, size_t limit, size_t *length, int *fd);

#endif
