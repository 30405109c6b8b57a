/* exit-record.h: the files a shim keeps in its state dir, shared by the shim
 * (writer) and boxd (reader, also after a restart).
 *
 * RUN_DIR/procs/<id>/
 *   meta    what runs: written once the command has started
 *   sock    the shim's control socket (shim-protocol.h)
 *   stdout  foreground captures (head, marker, tail), masked, when they are
 *   stderr  too big to travel in the exit record (see exit_record below)
 *   exit    the exit record: written last, atomically, after the log and the
 *           captures are complete. Its presence means "ended".
 *   meta.tmp  made empty ahead by a spare shim, filled and renamed into
 *           place (one rename instead of a create and a rename)
 * All files use the fields.h format. */
#ifndef BOXD_EXIT_RECORD_H
#define BOXD_EXIT_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXIT_RECORD_UNKNOWN (-1) /* cpuMs / peakMemoryBytes the kernel cannot tell */

struct shim_meta {
	char *id;
	char *cmd; /* masked */
	char *cwd; /* masked */
	char *user;
	char *log_path;
	char *cgroup;      /* the command's cgroup v2 dir, or NULL */
	char *pids_cgroup; /* its cgroup v1 pids dir (hybrid hosts), or NULL */
	bool background;
	bool pty;           /* it runs on a pseudo-terminal */
	bool stdin_stream;  /* its stdin is a pipe kept open for boxd */
	int64_t started_at; /* ms since the epoch */
	int64_t timeout_ms;
	int pid; /* the command's shell */
	int shim_pid;
};

struct exit_record {
	int exit_code; /* the shell's status; 128+N when killed by N; 124 on timeout */
	int signal;    /* 0 when it exited normally */
	bool timed_out;
	int64_t cpu_ms; /* EXIT_RECORD_UNKNOWN when the kernel cannot tell */
	int64_t peak_memory_bytes;
	int64_t oom_kills; /* processes the OOM killer killed; EXIT_RECORD_UNKNOWN: cannot tell */
	int64_t ended_at;
	int64_t duration_ms;
	int64_t log_bytes; /* bytes written to the log over the command's life */
	bool truncated;    /* a foreground capture dropped its middle */
	char *log_error;   /* why the log is incomplete (disk full...), or NULL */
	char *message;     /* set when the shim did not see the end itself */
	/* A foreground command's captures (stdout, stderr), when they are small
	 * enough to travel in the record itself (SHIM_MSG_EXIT and the exit
	 * file); otherwise they are the files stdout and stderr beside it. */
	bool has_captures;
	char *captures[2];
	size_t capture_lengths[2];
};

bool shim_meta_write(const struct shim_meta *meta, const char *path);
/* The same, on disk before it returns (fields_write_file_durable). */
bool shim_meta_write_durable(const struct shim_meta *meta, const char *path);
bool shim_meta_read(struct shim_meta *meta, const char *path);
/* The meta file's bytes (caller frees), and back: the shim's ready message
 * carries them, so boxd never reads the file back while it runs. */
char *shim_meta_format(const struct shim_meta *meta, size_t *length);
bool shim_meta_parse(struct shim_meta *meta, const char *data, size_t length);
void shim_meta_free(struct shim_meta *meta);

bool exit_record_write(const struct exit_record *record, const char *path);
/* The same, on disk before it returns (fields_write_file_durable). */
bool exit_record_write_durable(const struct exit_record *record, const char *path);
bool exit_record_read(struct exit_record *record, const char *path);
/* The record in the state files' format, for a SHIM_MSG_EXIT payload.
 * Caller frees. */
char *exit_record_format(const struct exit_record *record, size_t *length);
bool exit_record_parse(struct exit_record *record, const char *data, size_t length);
void exit_record_free(struct exit_record *record);
/* Frees the captures' bytes, keeping has_captures and their lengths. */
void exit_record_drop_captures(struct exit_record *record);

/* "SIGTERM" for 15, NULL for 0; signal_number("SIGTERM" or "TERM" or "15") or -1. */
const char *signal_name(int signal_number);
int signal_number(const char *name);

#endif
