/* shim-spec.h: what boxd tells a new boxd-shim about the command to run.
 *
 * boxd writes the spec into a memfd that becomes the shim's stdin, so secrets
 * and the command text never touch a file or a command line. */
#ifndef BOXD_SHIM_SPEC_H
#define BOXD_SHIM_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SHIM_SPEC_MAX_BYTES (64u << 20)
#define SHIM_HOLD_MS 2000

struct shim_rlimit {
	int resource; /* RLIMIT_* */
	uint64_t soft, hard;
};

struct shim_spec {
	char *id;
	char *cmd;
	char *cwd;  /* absolute */
	char *user; /* as the caller named it, for the record */
	uid_t uid;
	gid_t gid;
	gid_t *groups; /* supplementary groups */
	size_t group_count;
	char **env; /* "NAME=value", the command's whole environment */
	size_t env_count;
	char **secrets; /* values to mask in output */
	size_t secret_count;
	char *stdin_data; /* NULL: /dev/null */
	size_t stdin_length;
	/* stdin stays open as a pipe the shim holds (boxd writes into it
	 * through SHIM_MSG_INPUT_FD), instead of stdin_data or /dev/null. */
	bool stdin_stream;
	/* A pseudo-terminal of this size is the command's stdin, stdout and
	 * stderr (its controlling terminal); 0: none. */
	unsigned pty_cols, pty_rows;
	int64_t timeout_ms;
	size_t max_output_bytes; /* per stream capture for a foreground result; 0: none */
	bool background;
	/* Streaming: the shim reads no output until the first subscriber
	 * arrives (at most SHIM_HOLD_MS), so the stream misses nothing. */
	bool hold_output;
	char *state_dir;
	char *log_path;
	uint64_t log_cap_bytes;
	char *cgroup_base;   /* cgroup v2 dir under which the command gets its own, or NULL */
	char *shim_cgroup;   /* cgroup v2 dir the shim moves itself into, or NULL */
	char *pids_base;     /* cgroup v1 pids dir (hybrid hosts), or NULL */
	uint64_t pids_max;   /* 0: no limit */
	uint64_t memory_max; /* memory.max of the command's cgroup; 0: none */
	char *protected_dir; /* the processes a command may not reach (protected.h) */
	struct shim_rlimit *rlimits;
	size_t rlimit_count;
};

/* Serialises `spec` to `fd`. */
bool shim_spec_write(const struct shim_spec *spec, int fd);
/* The same bytes in memory (caller frees). */
char *shim_spec_format(const struct shim_spec *spec, size_t *length);
/* Reads a spec from `fd` (a memfd from its start, whatever its offset, or a
 * pipe); on failure returns false with a sentence in `error`. */
bool shim_spec_read(struct shim_spec *spec, int fd, char *error, size_t error_size);
/* Parses one from memory. `complete`: a command's spec (id, cmd, cwd, state
 * dir and log path required); else a spare's preparation (SHIM_MSG_PREPARE:
 * the id, state dir and log path to make ahead, and the cgroups). */
bool shim_spec_parse(struct shim_spec *spec, const char *data, size_t length, bool complete,
		     char *error, size_t error_size);
void shim_spec_free(struct shim_spec *spec);

#endif
