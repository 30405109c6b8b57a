/* shim-protocol.h: messages between boxd and a shim.
 *
 * SOCK_SEQPACKET unix sockets, so every message keeps its boundary: one type
 * byte, then the payload. boxd keeps one connection to every live shim: its
 * end-of-file is how boxd notices a shim that died. For a shim boxd started
 * that connection is the shim's stdin, a socketpair (the channel); for one
 * found again after a restart of boxd it is a connection to STATE_DIR/sock,
 * which also serves streams.
 *
 * On the channel, before the command runs (boxd-shim --spare):
 * boxd -> shim
 *   SHIM_MSG_PREPARE  a spec (shim-spec.h, fields) naming what to make ahead:
 *                     the id, state dir and log path, the cgroups; SCM_RIGHTS
 *                     carries one end of a socketpair for the seed: the
 *                     command's first process, which the shim forks ahead
 *                     into the cgroups made for that id. boxd keeps the other
 *                     end and sends the seed the same SHIM_MSG_SPEC (for that
 *                     very id only), so the seed goes straight to exec while
 *                     the shim wakes beside it.
 *   SHIM_MSG_SPEC     no payload; SCM_RIGHTS carries a memfd with the spec
 *   SHIM_MSG_SPEC_SEEDED  the same, and the seed has it too
 * shim -> boxd
 *   SHIM_MSG_READY    the command runs: the meta file's bytes (exit-record.h)
 *   SHIM_MSG_FAILED   "CODE SENTENCE": it could not start (CODE as the API's)
 * Then, as on any connection:
 *
 * shim -> boxd
 *   SHIM_MSG_STDOUT / SHIM_MSG_STDERR  masked output, only after SUBSCRIBE
 *   SHIM_MSG_LOST     "N": N bytes were not streamed (boxd was slow); the
 *                     log and the captures still have them
 *   SHIM_MSG_EXIT     the exit record, in the state file's format, with the
 *                     captures when they fit in one message. The file is
 *                     written before the message when the captures do not
 *                     fit (boxd reads them from the run dir), else just
 *                     after it. Shims before the channel sent it empty
 *                     once the file was written (the record only when it
 *                     could not be).
 * boxd -> shim
 *   SHIM_MSG_SUBSCRIBE  start sending output on this connection
 *   SHIM_MSG_STOP       "SIGNAL GRACE_MS": signal the whole tree, SIGKILL
 *                       after the grace
 *   SHIM_MSG_SECRETS    the new set of values to mask, NUL-separated
 *   SHIM_MSG_REPLAY     as SUBSCRIBE, after the terminal's recent output
 *                       (SHIM_MSG_REPLAYED pieces, oldest first)
 *   SHIM_MSG_INPUT_FD   asks for the command's input: the shim answers
 *                       SHIM_MSG_INPUT_FD with a dup of its end of the
 *                       stdin pipe (stdin stream) or of the terminal's
 *                       master, passed by SCM_RIGHTS, and the payload "pty"
 *                       or "pipe"; or SHIM_MSG_FAILED "CODE SENTENCE" when
 *                       there is none (no stdin stream, stdin closed,
 *                       the command ended)
 *   SHIM_MSG_CLOSE_STDIN  closes the shim's end of the stdin pipe (on a
 *                       terminal: the end-of-file character, ^D)
 *   SHIM_MSG_RESIZE     "COLS ROWS": the terminal's new size (the kernel
 *                       sends SIGWINCH to its foreground process group)
 *   SHIM_MSG_SIGNAL     "SIGNAL": to the terminal's foreground process
 *                       group (as typing ^C does), or without a terminal
 *                       to the whole tree, once, with no SIGKILL after
 * shim -> boxd
 *   SHIM_MSG_REPLAYED   a piece of the replay, before any live output
 */
#ifndef BOXD_SHIM_PROTOCOL_H
#define BOXD_SHIM_PROTOCOL_H

enum shim_message {
	SHIM_MSG_PREPARE = 'P',
	SHIM_MSG_SPEC = 's',
	SHIM_MSG_SPEC_SEEDED = 'z',
	SHIM_MSG_READY = 'R',
	SHIM_MSG_FAILED = 'F',
	SHIM_MSG_STDOUT = 'O',
	SHIM_MSG_STDERR = 'E',
	SHIM_MSG_LOST = 'L',
	SHIM_MSG_EXIT = 'X',
	SHIM_MSG_SUBSCRIBE = 'S',
	SHIM_MSG_STOP = 'K',
	SHIM_MSG_SECRETS = 'M',
	SHIM_MSG_REPLAY = 'Y',
	SHIM_MSG_REPLAYED = 'y',
	SHIM_MSG_INPUT_FD = 'T',
	SHIM_MSG_CLOSE_STDIN = 'C',
	SHIM_MSG_RESIZE = 'W',
	SHIM_MSG_SIGNAL = 'G',
};

/* A terminal's size, as the API takes it. */
#define SHIM_PTY_MIN 1
#define SHIM_PTY_MAX_COLS 1000
#define SHIM_PTY_MAX_ROWS 1000
/* The terminal's recent output the shim keeps for a client that attaches. */
#define SHIM_REPLAY_BYTES (512u << 10)

/* Largest message; output is sent in pieces of at most this less one byte. */
#define SHIM_MESSAGE_MAX 65536

/* The files of a command's state dir (RUN_DIR/procs/<id>/, docs/exec.md),
 * written by its shim and read by boxd, each first as NAME.tmp
 * (io_replace_open); META and EXIT are also what boxd keeps of a background
 * command in the work dir (exec-adopt.c). */
#define SHIM_STATE_META "meta"
#define SHIM_STATE_EXIT "exit"
#define SHIM_STATE_STDOUT "stdout"
#define SHIM_STATE_STDERR "stderr"
#define SHIM_STATE_SOCKET "sock"
/* "INODE BASE\n": the log file that is (or is about to become) LOG.1, by
 * inode, and the offset of its first byte in the command's whole output;
 * written before each rotation's rename, so boxd can number what it reads
 * across rotations (exec-log.c). Absent before the first rotation. */
#define SHIM_STATE_LOG_BASE "log-base"
/* The temporary each is written to before it is renamed into place. */
#define SHIM_STATE_TEMPORARY(name) name ".tmp"

#endif
