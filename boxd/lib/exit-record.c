#include "exit-record.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fields.h"
#include "xalloc.h"

/* A meta file holds the command's text, up to the 16 MiB of a request. */
#define STATE_FILE_LIMIT (32u << 20)

static void meta_fields(const struct shim_meta *meta, struct fields_writer *w_out)
{
	struct fields_writer w = {0};
	fields_add_string(&w, "id", meta->id);
	fields_add_string(&w, "cmd", meta->cmd);
	fields_add_string(&w, "cwd", meta->cwd);
	fields_add_string(&w, "user", meta->user);
	fields_add_string(&w, "logPath", meta->log_path);
	fields_add_string(&w, "cgroup", meta->cgroup);
	fields_add_string(&w, "pidsCgroup", meta->pids_cgroup);
	fields_add_int(&w, "background", meta->background);
	if (meta->pty)
		fields_add_int(&w, "pty", 1);
	if (meta->stdin_stream)
		fields_add_int(&w, "stdinStream", 1);
	fields_add_int(&w, "startedAt", meta->started_at);
	fields_add_int(&w, "timeoutMs", meta->timeout_ms);
	fields_add_int(&w, "pid", meta->pid);
	fields_add_int(&w, "shimPid", meta->shim_pid);
	*w_out = w;
}

static bool meta_write(const struct shim_meta *meta, const char *path, bool durable)
{
	struct fields_writer w;
	meta_fields(meta, &w);
	bool ok = durable ? fields_write_file_durable(&w, path) : fields_write_file(&w, path);
	fields_writer_free(&w);
	return ok;
}

bool shim_meta_write(const struct shim_meta *meta, const char *path)
{
	return meta_write(meta, path, false);
}

bool shim_meta_write_durable(const struct shim_meta *meta, const char *path)
{
	return meta_write(meta, path, true);
}

char *shim_meta_format(const struct shim_meta *meta, size_t *length)
{
	struct fields_writer w;
	meta_fields(meta, &w);
	*length = w.length;
	return w.data;
}

static void set_string(char **slot, const char *value, size_t length)
{
	free(*slot);
	*slot = fields_string(value, length);
}

bool shim_meta_read(struct shim_meta *meta, const char *path)
{
	*meta = (struct shim_meta){0};
	size_t length;
	char *data = fields_read_file(path, STATE_FILE_LIMIT, &length);
	if (!data)
		return false;
	bool ok = shim_meta_parse(meta, data, length);
	free(data);
	return ok;
}

bool shim_meta_parse(struct shim_meta *meta, const char *data, size_t length)
{
	*meta = (struct shim_meta){0};
	struct fields_reader r = {data, length, 0};
	const char *key, *v;
	size_t n;
	bool malformed;
	while (fields_next(&r, &key, &v, &n, &malformed)) {
		if (!strcmp(key, "id"))
			set_string(&meta->id, v, n);
		else if (!strcmp(key, "cmd"))
			set_string(&meta->cmd, v, n);
		else if (!strcmp(key, "cwd"))
			set_string(&meta->cwd, v, n);
		else if (!strcmp(key, "user"))
			set_string(&meta->user, v, n);
		else if (!strcmp(key, "logPath"))
			set_string(&meta->log_path, v, n);
		else if (!strcmp(key, "cgroup"))
			set_string(&meta->cgroup, v, n);
		else if (!strcmp(key, "pidsCgroup"))
			set_string(&meta->pids_cgroup, v, n);
		else if (!strcmp(key, "background"))
			meta->background = fields_int(v, n, 0);
		else if (!strcmp(key, "pty"))
			meta->pty = fields_int(v, n, 0) != 0;
		else if (!strcmp(key, "stdinStream"))
			meta->stdin_stream = fields_int(v, n, 0) != 0;
		else if (!strcmp(key, "startedAt"))
			meta->started_at = fields_int(v, n, 0);
		else if (!strcmp(key, "timeoutMs"))
			meta->timeout_ms = fields_int(v, n, 0);
		else if (!strcmp(key, "pid"))
			meta->pid = (int)fields_int(v, n, 0);
		else if (!strcmp(key, "shimPid"))
			meta->shim_pid = (int)fields_int(v, n, 0);
	}
	if (malformed || !meta->id) {
		shim_meta_free(meta);
		return false;
	}
	return true;
}

void shim_meta_free(struct shim_meta *meta)
{
	free(meta->id);
	free(meta->cmd);
	free(meta->cwd);
	free(meta->user);
	free(meta->log_path);
	free(meta->cgroup);
	free(meta->pids_cgroup);
	*meta = (struct shim_meta){0};
}

static void record_fields(const struct exit_record *record, struct fields_writer *w_out)
{
	struct fields_writer w = {0};
	fields_add_int(&w, "exitCode", record->exit_code);
	fields_add_int(&w, "signal", record->signal);
	fields_add_int(&w, "timedOut", record->timed_out);
	fields_add_int(&w, "cpuMs", record->cpu_ms);
	fields_add_int(&w, "peakMemoryBytes", record->peak_memory_bytes);
	fields_add_int(&w, "oomKills", record->oom_kills);
	fields_add_int(&w, "endedAt", record->ended_at);
	fields_add_int(&w, "durationMs", record->duration_ms);
	fields_add_int(&w, "logBytes", record->log_bytes);
	fields_add_int(&w, "truncated", record->truncated);
	fields_add_string(&w, "logError", record->log_error);
	fields_add_string(&w, "message", record->message);
	if (record->has_captures) {
		fields_add(&w, "stdout", record->captures[0], record->capture_lengths[0]);
		fields_add(&w, "stderr", record->captures[1], record->capture_lengths[1]);
	}
	*w_out = w;
}

static bool record_write(const struct exit_record *record, const char *path, bool durable)
{
	struct fields_writer w;
	record_fields(record, &w);
	bool ok = durable ? fields_write_file_durable(&w, path) : fields_write_file(&w, path);
	fields_writer_free(&w);
	return ok;
}

bool exit_record_write(const struct exit_record *record, const char *path)
{
	return record_write(record, path, false);
}

bool exit_record_write_durable(const struct exit_record *record, const char *path)
{
	return record_write(record, path, true);
}

char *exit_record_format(const struct exit_record *record, size_t *length)
{
	struct fields_writer w;
	record_fields(record, &w);
	*length = w.length;
	return w.data; /* the writer's buffer, handed over */
}

bool exit_record_read(struct exit_record *record, const char *path)
{
	size_t length;
	char *data = fields_read_file(path, STATE_FILE_LIMIT, &length);
	if (!data) {
		*record = (struct exit_record){.cpu_ms = EXIT_RECORD_UNKNOWN,
					       .peak_memory_bytes = EXIT_RECORD_UNKNOWN,
					       .oom_kills = EXIT_RECORD_UNKNOWN};
		return false;
	}
	bool ok = exit_record_parse(record, data, length);
	free(data);
	return ok;
}

bool exit_record_parse(struct exit_record *record, const char *data, size_t length)
{
	*record = (struct exit_record){.cpu_ms = EXIT_RECORD_UNKNOWN,
				       .peak_memory_bytes = EXIT_RECORD_UNKNOWN,
				       .oom_kills = EXIT_RECORD_UNKNOWN};
	struct fields_reader r = {data, length, 0};
	const char *key, *v;
	size_t n;
	bool malformed;
	while (fields_next(&r, &key, &v, &n, &malformed)) {
		if (!strcmp(key, "exitCode"))
			record->exit_code = (int)fields_int(v, n, -1);
		else if (!strcmp(key, "signal"))
			record->signal = (int)fields_int(v, n, 0);
		else if (!strcmp(key, "timedOut"))
			record->timed_out = fields_int(v, n, 0);
		else if (!strcmp(key, "cpuMs"))
			record->cpu_ms = fields_int(v, n, -1);
		else if (!strcmp(key, "peakMemoryBytes"))
			record->peak_memory_bytes = fields_int(v, n, -1);
		else if (!strcmp(key, "oomKills"))
			record->oom_kills = fields_int(v, n, -1);
		else if (!strcmp(key, "endedAt"))
			record->ended_at = fields_int(v, n, 0);
		else if (!strcmp(key, "durationMs"))
			record->duration_ms = fields_int(v, n, 0);
		else if (!strcmp(key, "logBytes"))
			record->log_bytes = fields_int(v, n, 0);
		else if (!strcmp(key, "truncated"))
			record->truncated = fields_int(v, n, 0);
		else if (!strcmp(key, "logError"))
			set_string(&record->log_error, v, n);
		else if (!strcmp(key, "message"))
			set_string(&record->message, v, n);
		else if (!strcmp(key, "stdout") || !strcmp(key, "stderr")) {
			int which = key[3] == 'e';
			free(record->captures[which]);
			/* Bytes, NULs included (fields_string would stop at one). */
			record->captures[which] = xmalloc(n + 1);
			memcpy(record->captures[which], v, n);
			record->captures[which][n] = '\0';
			record->capture_lengths[which] = n;
			record->has_captures = true;
		}
	}
	if (malformed) {
		exit_record_free(record);
		return false;
	}
	return true;
}

void exit_record_free(struct exit_record *record)
{
	free(record->log_error);
	free(record->message);
	record->log_error = record->message = NULL;
	exit_record_drop_captures(record);
	record->has_captures = false;
}

void exit_record_drop_captures(struct exit_record *record)
{
	for (int i = 0; i < 2; i++) {
		free(record->captures[i]);
		record->captures[i] = NULL;
	}
}

static const struct {
	int number;
	const char *name;
} signal_names[] = {
	{SIGHUP, "SIGHUP"},       {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},
	{SIGILL, "SIGILL"},       {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},
	{SIGBUS, "SIGBUS"},       {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
	{SIGUSR1, "SIGUSR1"},     {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
	{SIGPIPE, "SIGPIPE"},     {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
	{SIGCHLD, "SIGCHLD"},     {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"},
	{SIGTSTP, "SIGTSTP"},     {SIGTTIN, "SIGTTIN"}, {SIGTTOU, "SIGTTOU"},
	{SIGURG, "SIGURG"},       {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
	{SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"},
	{SIGIO, "SIGIO"},         {SIGPWR, "SIGPWR"},   {SIGSYS, "SIGSYS"},
};

const char *signal_name(int number)
{
	for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
		if (signal_names[i].number == number)
			return signal_names[i].name;
	return number > 0 ? "SIGUNKNOWN" : NULL;
}

int signal_number(const char *name)
{
	if (!name || !*name)
		return -1;
	char *end;
	long n = strtol(name, &end, 10);
	if (!*end)
		return n > 0 && n < 65 ? (int)n : -1;
	for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
		if (!strcasecmp(signal_names[i].name, name) ||
		    !strcasecmp(signal_names[i].name + 3, name))
			return signal_names[i].number;
	return -1;
}
