#include "handback.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "clock.h"
#include "exec.h"
#include "lock.h"
#include "log.h"
#include "proc-events.h"
#include "screen-client.h"
#include "xalloc.h"

/* Commands told at most; more are counted in "commandsMore". A build a person
 * starts runs thousands of programs, but only those typed at a prompt count. */
#define COMMANDS_MAX 200

struct seen_command {
	int pid;
	int64_t at_ms;
	char *command; /* NULL: it ended before boxd could read it */
	char *terminal;
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
	/* The screen's look at the lock: a hash of its full-size PNG without
	 * the pointer (the encoder is deterministic: same pixels, same bytes). */
	bool look_known;
	uint64_t look;
	unsigned lock_number; /* a look that comes after its lock ended is dropped */
	/* The clipboard: heard through the held worker (screen_client_hold). */
	bool clipboard_changed;
	bool worker_gap; /* the worker went away meanwhile: a change may be unheard */
	bool listening;
	bool ending; /* a hand-back's answer is on its way */
} handback;

/* A hand-back on its way: its answers come one after another. */
struct ending {
	handback_done_fn done;
	void *arg;
	int64_t held_ms;
	cJSON *changes;
	bool clipboard_heard; /* a worker listened from the lock to now */
};

/* Only the clipboard counts: the primary selection changes with every
 * stretch of text selected anywhere (a click in a page's field will do), and
 * says nothing of what the person copied. */
static void on_clipboard_changed(const char *selection)
{
	if (handback.listening && strcmp(selection, "clipboard") == 0)
		handback.clipboard_changed = true;
}

static void on_worker_exit(const char *why)
{
	(void)why;
	if (handback.listening)
		handback.worker_gap = true;
}

void handback_init(struct event_base *base, const struct boxd_config *config)
{
	static const struct screen_client_listener listener = {
		.clipboard_changed = on_clipboard_changed,
		.worker_exit = on_worker_exit,
	};
	handback.base = base;
	handback.config = config;
	screen_client_listen(&listener);
}

/* ---- commands started by anyone ---- */

static void forget_commands(void)
{
	for (size_t i = 0; i < handback.command_count; i++) {
		free(handback.commands[i].command);
		free(handback.commands[i].terminal);
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
	seen->terminal = xstrdup(exec->terminal);
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
		cJSON_AddStringToObject(item, "terminal", seen->terminal);
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

/* ---- the screen ---- */

static uint64_t hash_bytes(const void *data, size_t length)
{
	/* FNV-1a: the two looks are compared, nothing is kept against attack. */
	uint64_t hash = 0xcbf29ce484222325u;
	for (size_t i = 0; i < length; i++)
		hash = (hash ^ ((const unsigned char *)data)[i]) * 0x100000001b3u;
	return hash ^ length;
}

static void take_look(screen_shot_done_fn done, void *arg)
{
	static const struct screen_shot_options options = {.format = "png", .cursor = "0"};
	screen_shot(&options, done, arg);
}

static void on_first_look(void *arg, const struct screen_shot *shot,
			  const struct screen_failure *failed)
{
	if (!shot || (uintptr_t)arg != handback.lock_number)
		return;
	handback.look = hash_bytes(shot->data, shot->length);
	handback.look_known = true;
}

static void finish(struct ending *ending)
{
	handback.ending = false;
	ending->done(ending->arg, ending->held_ms, ending->changes);
	free(ending);
}

/* "focusedWindow": the window with the input focus now, or null; then
 * "clipboardChanged": true when heard, false when the worker was there
 * throughout to hear it (the first look was taken), else null. */
static void on_windows(void *arg, const struct screen_window *windows, size_t count,
		       const struct screen_failure *failed)
{
	struct ending *ending = arg;
	cJSON *focused = NULL;
	for (size_t i = 0; i < count && !focused; i++) {
		if (!windows[i].focused)
			continue;
		focused = cJSON_CreateObject();
		cJSON_AddStringToObject(focused, "title", windows[i].title);
		cJSON_AddStringToObject(focused, "class", windows[i].class_name);
	}
	cJSON_AddItemToObject(ending->changes, "focusedWindow",
			      focused ? focused : cJSON_CreateNull());
	if (handback.clipboard_changed)
		cJSON_AddTrueToObject(ending->changes, "clipboardChanged");
	else if (ending->clipboard_heard)
		cJSON_AddFalseToObject(ending->changes, "clipboardChanged");
	else
		cJSON_AddNullToObject(ending->changes, "clipboardChanged");
	handback.listening = false;
	screen_client_hold(false);
	finish(ending);
}

/* "screen": whether it looks different from when the person took it; null
 * when either look could not be taken (no display, or not yet at the lock). */
static void on_last_look(void *arg, const struct screen_shot *shot,
			 const struct screen_failure *failed)
{
	struct ending *ending = arg;
	ending->clipboard_heard = handback.look_known && !handback.worker_gap;
	if (shot && handback.look_known)
		cJSON_AddBoolToObject(ending->changes, "screen",
				      hash_bytes(shot->data, shot->length) != handback.look);
	else
		cJSON_AddNullToObject(ending->changes, "screen");
	handback.look_known = false;
	screen_windows(on_windows, ending);
}

/* ---- the lock's two ends ---- */

void handback_begin(bool taken_back)
{
	forget_commands();
	free(handback.files_cursor);
	handback.files_cursor = changes_cursor();
	handback.since_ms = lock_since();
	handback.look_known = false;
	handback.clipboard_changed = handback.worker_gap = false;
	handback.listening = true;
	/* A worker runs through the takeover, to hear the person copy. */
	screen_client_hold(true);
	handback.lock_number++;
	/* At boxd's start the look at the lock is long gone. */
	if (!taken_back)
		take_look(on_first_look, (void *)(uintptr_t)handback.lock_number);
	handback.since_before_start = taken_back;
	listen_for_commands();
}

bool handback_end(handback_done_fn done, void *arg)
{
	if (handback.ending)
		return false;
	handback.ending = true;
	struct ending *ending = xmalloc(sizeof *ending);
	ending->done = done;
	ending->arg = arg;
	ending->held_ms = clock_now_ms() - handback.since_ms;
	ending->changes = cJSON_CreateObject();
	add_files(ending->changes);
	cJSON_AddItemToObject(ending->changes, "commands", commands_json(handback.since_ms));
	if (handback.commands_more)
		cJSON_AddNumberToObject(ending->changes, "commandsMore",
					(double)handback.commands_more);
	if (!handback.commands_heard || proc_events_refused())
		cJSON_AddStringToObject(ending->changes, "commandsSeen", "boxd");
	if (handback.since_before_start)
		cJSON_AddStringToObject(ending->changes, "incomplete",
					"boxd restarted during the takeover: files are not listed "
					"(filesAll), commands only since its start");
	proc_events_stop();
	forget_commands();
	free(handback.files_cursor);
	handback.files_cursor = NULL;
	handback.lock_number++;
	take_look(on_last_look, ending);
	return true;
}
