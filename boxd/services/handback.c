#include "handback.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "clock.h"
#include "exec.h"
#include "lock.h"
#include "log.h"
#include "proc-events.h"
#include "xalloc.h"

/* Commands told at most; more are counted in "commandsMore". A build a person
 * starts runs thousands of programs, but only those typed at a prompt count. */
#define COMMANDS_MAX 200

struct seen_command {
	int pid;
	int64_t at_ms;
	char *command; /* NULL: it ended before boxd could read it */
	char *job_id;
};

static struct {
	struct event_base *base;
	const struct boxd_config *config;
	int64_t since_ms;        /* when the lock began */
	bool since_before_start; /* locked before this boxd started */
	char *files_cursor;
	struct seen_command commands[COMMANDS_MAX];
	size_t command_count, commands_more;
	bool commands_heard; /* the kernel's process events were open */
} handback;

void handback_init(struct event_base *base, const struct boxd_config *config)
{
	handback.base = base;
	handback.config = config;
}

/* ---- commands started by anyone ---- */

static void forget_commands(void)
{
	for (size_t i = 0; i < handback.command_count; i++) {
		free(handback.commands[i].command);
		free(handback.commands[i].job_id);
	}
	handback.command_count = handback.commands_more = 0;
}

/* A program counts as a command when it was typed at a prompt: its parent
 * leads a session on a terminal (a shell in an xterm or in boxd's own
 * terminal). A command's own children, a script's and a build's programs do
 * not; boxd's own commands are counted from its jobs. */
static void on_exec(void *arg, const struct proc_exec *exec)
{
	(void)arg;
	if (!exec->parent_at_prompt)
		return;
	/* A program that runs another in its place (`bash -c 'x'`, env, nice)
	 * is still the command that was typed. */
	for (size_t i = 0; i < handback.command_count; i++)
		if (handback.commands[i].pid == exec->pid)
			return;
	if (handback.command_count == COMMANDS_MAX) {
		handback.commands_more++;
		return;
	}
	struct seen_command *seen = &handback.commands[handback.command_count++];
	seen->pid = exec->pid;
	seen->at_ms = exec->at_ms;
	seen->command = exec->command ? xstrdup(exec->command) : NULL;
	seen->job_id = exec->job_id && exec_find(exec->job_id) ? xstrdup(exec->job_id) : NULL;
}

static void listen_for_commands(void)
{
	char why[256];
	handback.commands_heard = proc_events_start(handback.base, on_exec, NULL, why, sizeof why);
	if (!handback.commands_heard)
		log_msg(LOG_LEVEL_WARNING, "the hand-back will list only boxd's own commands: %s",
			why);
}

static bool is_job_shell(int pid, int64_t since)
{
	for (struct exec_job *job = exec_first(); job; job = job->next)
		if (job->meta.pid == pid && job->meta.started_at >= since)
			return true;
	return false;
}

static cJSON *commands_json(int64_t since)
{
	cJSON *list = cJSON_CreateArray();
	for (struct exec_job *job = exec_first(); job; job = job->next) {
		if (job->meta.started_at < since)
			continue;
		cJSON *item = cJSON_CreateObject();
		cJSON_AddStringToObject(item, "id", job->id);
		cJSON_AddStringToObject(item, "command", job->meta.cmd ? job->meta.cmd : "");
		cJSON_AddNumberToObject(item, "startedAt", (double)job->meta.started_at);
		cJSON_AddItemToArray(list, item);
	}
	for (size_t i = 0; i < handback.command_count; i++) {
		const struct seen_command *seen = &handback.commands[i];
		if (is_job_shell(seen->pid, since))
			continue;
		cJSON *item = cJSON_CreateObject();
		if (seen->job_id)
			cJSON_AddStringToObject(item, "id", seen->job_id);
		if (seen->command)
			cJSON_AddStringToObject(item, "command", seen->command);
		else
			cJSON_AddNullToObject(item, "command");
		cJSON_AddNumberToObject(item, "pid", seen->pid);
		cJSON_AddNumberToObject(item, "startedAt", (double)seen->at_ms);
		cJSON_AddItemToArray(list, item);
	}
	return list;
}

/* ---- files ---- */

/* The files changed since the lock, as the changes route shows them; with
 * `all` when the journal cannot say exactly (then the list is empty). */
static void add_files(cJSON *changes)
{
	struct change_list list = {0};
	struct changes_scope scope = {.under = "", .internals = false};
	enum failure failure;
	char why[256];
	cJSON *files = cJSON_AddArrayToObject(changes, "files");
	if (!handback.files_cursor || handback.since_before_start ||
	    !changes_since(handback.files_cursor, &scope, &list, &failure, why, sizeof why)) {
		cJSON_AddTrueToObject(changes, "filesAll");
		return;
	}
	if (list.all)
		cJSON_AddTrueToObject(changes, "filesAll");
	for (size_t i = 0; i < list.count && !list.all; i++)
		cJSON_AddItemToArray(files,
				     change_to_json(&list.items[i], handback.config->work_dir));
	change_list_free(&list);
}

/* ---- the lock's two ends ---- */

void handback_begin(bool taken_back)
{
	forget_commands();
	free(handback.files_cursor);
	handback.files_cursor = changes_cursor();
	handback.since_ms = lock_since();
	handback.since_before_start = taken_back;
	listen_for_commands();
}

void handback_end(handback_done_fn done, void *arg)
{
	int64_t since = handback.since_ms, held_ms = clock_now_ms() - since;
	cJSON *changes = cJSON_CreateObject();
	add_files(changes);
	cJSON_AddItemToObject(changes, "commands", commands_json(since));
	if (handback.commands_more)
		cJSON_AddNumberToObject(changes, "commandsMore", (double)handback.commands_more);
	if (!handback.commands_heard)
		cJSON_AddStringToObject(changes, "commandsSeen", "boxd");
	if (handback.since_before_start)
		cJSON_AddStringToObject(changes, "incomplete",
					"boxd restarted during the takeover: files are not listed "
					"(filesAll), commands only since its start");
	proc_events_stop();
	forget_commands();
	free(handback.files_cursor);
	handback.files_cursor = NULL;
	done(arg, held_ms, changes);
}
