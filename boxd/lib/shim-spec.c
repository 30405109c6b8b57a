#include "shim-spec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fields.h"
#include "io.h"
#include "text.h"
#include "xalloc.h"

static void add_list(struct fields_writer *w, const char *key, char **items, size_t count)
{
	for (size_t i = 0; i < count; i++)
		fields_add_string(w, key, items[i]);
}

static void spec_fields(const struct shim_spec *spec, struct fields_writer *w_out)
{
	struct fields_writer w = {0};
	fields_add_string(&w, "id", spec->id);
	fields_add_string(&w, "cmd", spec->cmd);
	fields_add_string(&w, "cwd", spec->cwd);
	fields_add_string(&w, "user", spec->user);
	fields_add_int(&w, "uid", spec->uid);
	fields_add_int(&w, "gid", spec->gid);
	for (size_t i = 0; i < spec->group_count; i++)
		fields_add_int(&w, "group", spec->groups[i]);
	add_list(&w, "env", spec->env, spec->env_count);
	add_list(&w, "secret", spec->secrets, spec->secret_count);
	if (spec->stdin_data)
		fields_add(&w, "stdin", spec->stdin_data, spec->stdin_length);
	if (spec->stdin_stream)
		fields_add_int(&w, "stdinStream", 1);
	if (spec->pty_cols && spec->pty_rows) {
		fields_add_int(&w, "ptyCols", spec->pty_cols);
		fields_add_int(&w, "ptyRows", spec->pty_rows);
	}
	fields_add_int(&w, "timeoutMs", spec->timeout_ms);
	fields_add_int(&w, "maxOutputBytes", (int64_t)spec->max_output_bytes);
	fields_add_int(&w, "background", spec->background);
	fields_add_int(&w, "holdOutput", spec->hold_output);
	fields_add_string(&w, "stateDir", spec->state_dir);
	fields_add_string(&w, "logPath", spec->log_path);
	fields_add_int(&w, "logCapBytes", (int64_t)spec->log_cap_bytes);
	fields_add_string(&w, "cgroupBase", spec->cgroup_base);
	fields_add_string(&w, "shimCgroup", spec->shim_cgroup);
	fields_add_string(&w, "pidsBase", spec->pids_base);
	fields_add_int(&w, "pidsMax", (int64_t)spec->pids_max);
	fields_add_int(&w, "memoryMax", (int64_t)spec->memory_max);
	if (spec->protected_dir)
		fields_add_string(&w, "protectedDir", spec->protected_dir);
	for (size_t i = 0; i < spec->rlimit_count; i++) {
		char text[96];
		snprintf(text, sizeof text, "%d %" PRIu64 " %" PRIu64, spec->rlimits[i].resource,
			 spec->rlimits[i].soft, spec->rlimits[i].hard);
		fields_add_string(&w, "rlimit", text);
	}
	*w_out = w;
}

bool shim_spec_write(const struct shim_spec *spec, int fd)
{
	struct fields_writer w;
	spec_fields(spec, &w);
	bool ok = fields_write_fd(&w, fd);
	fields_writer_free(&w);
	return ok;
}

char *shim_spec_format(const struct shim_spec *spec, size_t *length)
{
	struct fields_writer w;
	spec_fields(spec, &w);
	*length = w.length;
	return w.data;
}

static void push_string(char ***items, size_t *count, const char *value, size_t length)
{
	*items = xrealloc(*items, (*count + 1) * sizeof **items);
	(*items)[(*count)++] = fields_string(value, length);
}

static void take_string(char **slot, const char *value, size_t length)
{
	free(*slot);
	*slot = fields_string(value, length);
}

static bool take_field(struct shim_spec *s, const char *key, const char *v, size_t n)
{
	if (!strcmp(key, "id"))
		take_string(&s->id, v, n);
	else if (!strcmp(key, "cmd"))
		take_string(&s->cmd, v, n);
	else if (!strcmp(key, "cwd"))
		take_string(&s->cwd, v, n);
	else if (!strcmp(key, "user"))
		take_string(&s->user, v, n);
	else if (!strcmp(key, "uid"))
		s->uid = (uid_t)fields_int(v, n, 0);
	else if (!strcmp(key, "gid"))
		s->gid = (gid_t)fields_int(v, n, 0);
	else if (!strcmp(key, "group")) {
		s->groups = xrealloc(s->groups, (s->group_count + 1) * sizeof *s->groups);
		s->groups[s->group_count++] = (gid_t)fields_int(v, n, 0);
	} else if (!strcmp(key, "env"))
		push_string(&s->env, &s->env_count, v, n);
	else if (!strcmp(key, "secret"))
		push_string(&s->secrets, &s->secret_count, v, n);
	else if (!strcmp(key, "stdin")) {
		free(s->stdin_data);
		s->stdin_data = fields_string(v, n);
		s->stdin_length = n;
	} else if (!strcmp(key, "stdinStream"))
		s->stdin_stream = fields_int(v, n, 0) != 0;
	else if (!strcmp(key, "ptyCols"))
		s->pty_cols = (unsigned)fields_int(v, n, 0);
	else if (!strcmp(key, "ptyRows"))
		s->pty_rows = (unsigned)fields_int(v, n, 0);
	else if (!strcmp(key, "timeoutMs"))
		s->timeout_ms = fields_int(v, n, 0);
	else if (!strcmp(key, "maxOutputBytes"))
		s->max_output_bytes = (size_t)fields_int(v, n, 0);
	else if (!strcmp(key, "background"))
		s->background = fields_int(v, n, 0);
	else if (!strcmp(key, "holdOutput"))
		s->hold_output = fields_int(v, n, 0);
	else if (!strcmp(key, "stateDir"))
		take_string(&s->state_dir, v, n);
	else if (!strcmp(key, "logPath"))
		take_string(&s->log_path, v, n);
	else if (!strcmp(key, "logCapBytes"))
		s->log_cap_bytes = (uint64_t)fields_int(v, n, 0);
	else if (!strcmp(key, "cgroupBase"))
		take_string(&s->cgroup_base, v, n);
	else if (!strcmp(key, "shimCgroup"))
		take_string(&s->shim_cgroup, v, n);
	else if (!strcmp(key, "pidsBase"))
		take_string(&s->pids_base, v, n);
	else if (!strcmp(key, "pidsMax"))
		s->pids_max = (uint64_t)fields_int(v, n, 0);
	else if (!strcmp(key, "memoryMax"))
		s->memory_max = (uint64_t)fields_int(v, n, 0);
	else if (!strcmp(key, "protectedDir"))
		take_string(&s->protected_dir, v, n);
	else if (!strcmp(key, "rlimit")) {
		char *text = fields_string(v, n);
		struct shim_rlimit limit;
		bool ok = sscanf(text, "%d %" SCNu64 " %" SCNu64, &limit.resource, &limit.soft,
				 &limit.hard) == 3;
		free(text);
		if (!ok)
			return false;
		s->rlimits = xrealloc(s->rlimits, (s->rlimit_count + 1) * sizeof *s->rlimits);
		s->rlimits[s->rlimit_count++] = limit;
	}
	return true;
}

/* The whole of a memfd by position, not by its offset: a shim and the
 * command's first process read the same one at once (shims/shim-prepare.c).
 * A pipe (nothing to stat) is read to its end. */
static char *read_at_start(int fd, size_t *length)
{
	struct stat info;
	if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode))
		return io_read_to_end(fd, SHIM_SPEC_MAX_BYTES, length);
	if ((uint64_t)info.st_size > SHIM_SPEC_MAX_BYTES) {
		errno = EFBIG;
		return NULL;
	}
	size_t size = (size_t)info.st_size, done = 0;
	char *data = xmalloc(size + 1);
	while (done < size) {
		ssize_t n = pread(fd, data + done, size - done, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	data[done] = '\0';
	*length = done;
	return data;
}

bool shim_spec_read(struct shim_spec *spec, int fd, char *error, size_t error_size)
{
	*spec = (struct shim_spec){0};
	size_t length;
	char *data = read_at_start(fd, &length);
	if (!data)
		return text_fail(error, error_size, "cannot read the spec on stdin: %s",
				 strerror(errno));
	bool ok = shim_spec_parse(spec, data, length, true, error, error_size);
	explicit_bzero(data, length); /* secrets */
	free(data);
	return ok;
}

bool shim_spec_parse(struct shim_spec *spec, const char *data, size_t length, bool complete,
		     char *error, size_t error_size)
{
	*spec = (struct shim_spec){0};
	struct fields_reader r = {data, length, 0};
	const char *key, *v;
	size_t n;
	bool malformed = false, ok = true;
	while (ok && fields_next(&r, &key, &v, &n, &malformed))
		ok = take_field(spec, key, v, n);
	if (malformed || !ok || !spec->id || !spec->state_dir || !spec->log_path ||
	    (complete && (!spec->cmd || !spec->cwd))) {
		snprintf(error, error_size, "the spec on stdin is malformed or incomplete");
		shim_spec_free(spec);
		return false;
	}
	return true;
}

static void free_list(char **items, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(items[i]);
	free(items);
}

void shim_spec_free(struct shim_spec *s)
{
	free(s->id);
	free(s->cmd);
	free(s->cwd);
	free(s->user);
	free(s->groups);
	free_list(s->env, s->env_count);
	free_list(s->secrets, s->secret_count);
	free(s->stdin_data);
	free(s->state_dir);
	free(s->log_path);
	free(s->cgroup_base);
	free(s->shim_cgroup);
	free(s->pids_base);
	free(s->protected_dir);
	free(s->rlimits);
	*s = (struct shim_spec){0};
}
