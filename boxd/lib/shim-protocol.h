/* shim-protocol.h: messages on a shim's control socket (STATE_DIR/sock).
 *
 * A SOCK_SEQPACKET unix socket, so every message keeps its boundary: one type
 * byte, then the payload. boxd connects to every live shim and keeps the
 * connection: its end-of-file is how boxd notices a shim that died.
 *
 * shim -> boxd
 *   SHIM_MSG_STDOUT / SHIM_MSG_STDERR  masked output, only after SUBSCRIBE
 *   SHIM_MSG_LOST     "N": N bytes were not streamed (boxd was slow); the
 *                     log and the captures still have them
 *   SHIM_MSG_EXIT     the exit record has been written (payload empty), or
 *                     could not be (a full disk): then the payload is the
 *                     record itself, in the state file's format
 * boxd -> shim
 *   SHIM_MSG_SUBSCRIBE  start sending output on this connection
 *   SHIM_MSG_STOP       "SIGNAL GRACE_MS": signal the whole tree, SIGKILL
 *                       after the grace
 *   SHIM_MSG_SECRETS    the new set of values to mask, NUL-separated
 */
#ifndef BOXD_SHIM_PROTOCOL_H
#define BOXD_SHIM_PROTOCOL_H

enum shim_message {
	SHIM_MSG_STDOUT = 'O',
	SHIM_MSG_STDERR = 'E',
	SHIM_MSG_LOST = 'L',
	SHIM_MSG_EXIT = 'X',
	SHIM_MSG_SUBSCRIBE = 'S',
	SHIM_MSG_STOP = 'K',
	SHIM_MSG_SECRETS = 'M',
};

/* Largest message; output is sent in pieces of at most this less one byte. */
#define SHIM_MESSAGE_MAX 65536

#endif
