/* exec-json.c: a command as the API shows it (results, exit events, procs). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "exec-internal.h"
#include "fields.h"
#include "redact.h"
#include "utf8.h"
#include "shim-protocol.h"
#include "xalloc.h"

static void add_nullable(cJSON *object, const char *name, int64_t value)
{
	if (value < 0)
		cJSON_AddNullToObject(object, name);
	else
		cJSON_AddNumberToObject(object, name, (double)value);
}

/* A capture, as valid UTF-8: in the record boxd holds (a foreground
 * command's, until its shim is gone), in the exit file (small ones), or in
 * a file of its own (big ones, and a shim from before the channel's). */
static void add_capture(cJSON *object, struct exec_job *job, int which)
{
	const char *file = which ? SHIM_STATE_STDERR : SHIM_STATE_STDOUT;
	const char *field = which ? "stderr" : "stdout";
	const char *bytes = job->exit.captures[which];
	size_t length = job->exit.capture_lengths[which];
	char *data = NULL;
	if (!bytes && job->exit.has_captures) {
		char *path = exec_state_path(job->id, SHIM_STATE_EXIT);
		struct exit_record record;
		if (exit_record_read(&record, path)) {
			data = record.captures[which];
			length = record.capture_lengths[which];
			record.captures[which] = NULL;
		}
		exit_record_free(&record);
		free(path);
	} else if (!bytes) {
		char *path = exec_state_path(job->id, file);
		data = fields_read_file(path, 256u << 20, &length);
		free(path);
	}
	if (data)
		bytes = data;
	char *text = utf8_sanitize(bytes ? bytes : "", bytes ? length : 0, NULL);
	cJSON_AddStringToObject(object, field, text);
	free(text);
	free(data);
}

static void add_exit_fields(cJSON *o, struct exec_job *job)
{
	const struct exit_record *e = &job->exit;
	if (e->exit_code < 0) /* lost with a restart of the box: no status */
		cJSON_AddNullToObject(o, "exitCode");
	else
		cJSON_AddNumberToObject(o, "exitCode", e->exit_code);
	const char *sig = signal_name(e->signal);
	if (sig)
		cJSON_AddStringToObject(o, "signal", sig);
	else
		cJSON_AddNullToObject(o, "signal");
	cJSON_AddBoolToObject(o, "timedOut", e->timed_out);
	/* null: the kernel cannot tell (no memory controller for commands). */
	if (e->oom_kills < 0)
		cJSON_AddNullToObject(o, "oomKilled");
	else
		cJSON_AddBoolToObject(o, "oomKilled", e->oom_kills > 0);
}

cJSON *exec_result_json(struct exec_job *job, bool with_output)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", job->id);
	bool ended = job->state == EXEC_ENDED;
	cJSON_AddStringToObject(o, "state", ended ? "exited" : "running");
	if (!ended) {
		cJSON_AddNumberToObject(o, "pid", job->meta.pid);
		cJSON_AddNumberToObject(o, "startedAt", (double)job->meta.started_at);
		cJSON_AddStringToObject(o, "logPath", job->meta.log_path ? job->meta.log_path : "");
		return o;
	}
	add_exit_fields(o, job);
	if (with_output && !job->meta.background) {
		add_capture(o, job, 0);
		add_capture(o, job, 1);
	}
	cJSON_AddBoolToObject(o, "truncated", job->exit.truncated);
	cJSON_AddNumberToObject(o, "startedAt", (double)job->meta.started_at);
	cJSON_AddNumberToObject(o, "durationMs", (double)job->exit.duration_ms);
	add_nullable(o, "cpuMs", job->exit.cpu_ms);
	add_nullable(o, "peakMemoryBytes", job->exit.peak_memory_bytes);
	cJSON_AddStringToObject(o, "logPath", job->meta.log_path ? job->meta.log_path : "");
	if (job->exit.log_error)
		cJSON_AddStringToObject(o, "logError", job->exit.log_error);
	if (job->exit.message)
		cJSON_AddStringToObject(o, "message", job->exit.message);
	return o;
}

cJSON *exec_proc_json(struct exec_job *job)
{
	cJSON *o = cJSON_CreateObject();
	bool ended = job->state == EXEC_ENDED;
	cJSON_AddStringToObject(o, "bgId", job->id);
	char *cmd = redact_text(job->meta.cmd ? job->meta.cmd : "");
	cJSON_AddStringToObject(o, "cmd", cmd);
	free(cmd);
	cJSON_AddStringToObject(o, "cwd", job->meta.cwd ? job->meta.cwd : "");
	cJSON_AddNumberToObject(o, "pid", job->meta.pid);
	cJSON_AddStringToObject(o, "state", ended ? "exited" : "running");
	/* Beyond the contract's fields: how a client can talk to it. */
	cJSON_AddBoolToObject(o, "pty", job->meta.pty);
	cJSON_AddBoolToObject(o, "stdinStream", job->meta.stdin_stream);
	cJSON_AddNumberToObject(o, "startedAt", (double)job->meta.started_at);
	if (ended) {
		cJSON_AddNumberToObject(o, "endedAt", (double)job->exit.ended_at);
		add_exit_fields(o, job);
	} else {
		cJSON_AddNullToObject(o, "endedAt");
		cJSON_AddNullToObject(o, "exitCode");
		cJSON_AddNullToObject(o, "signal");
		cJSON_AddBoolToObject(o, "timedOut", false);
		cJSON_AddNullToObject(o, "oomKilled");
	}
	const char *log = job->meta.log_path ? job->meta.log_path : "";
	cJSON_AddStringToObject(o, "logPath", log);
	struct stat info;
	char *older = xasprintf("%s.1", log);
	double bytes = (stat(log, &info) == 0 ? (double)info.st_size : 0) +
		       (stat(older, &info) == 0 ? (double)info.st_size : 0);
	free(older);
	cJSON_AddNumberToObject(o, "logBytes", bytes);
	add_nullable(o, "cpuMs", ended ? job->exit.cpu_ms : -1);
	add_nullable(o, "peakMemoryBytes", ended ? job->exit.peak_memory_bytes : -1);
	if (ended && job->exit.log_error)
		cJSON_AddStringToObject(o, "logError", job->exit.log_error);
	if (ended && job->exit.message)
		cJSON_AddStringToObject(o, "message", job->exit.message);
	if (job->note)
		cJSON_AddStringToObject(o, "note", job->note);
	return o;
}
