/* freeze.c: the freeze's states, kept across restarts, and its answer
 * (freeze.h). What it does to the system is freeze-system.c's. */
#include "freeze.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "clock.h"
#include "exec.h"
#include "freeze-system.h"
#include "health.h"
#include "io.h"
#include "log.h"
#include "offload.h"
#include "steps.h"
#include "xalloc.h"

/* How often a freeze looks whether its cgroups have settled, while it waits
 * for them (only then: an idle boxd keeps no timer). */
#define SETTLE_POLL_MS 5

enum state { THAWED, FREEZING, FROZEN };

/* The freeze call in progress. */
struct call {
	freeze_done_fn done;
	void *arg;
	bool reclaim;
	bool flushing; /* its thread runs: that thread's end frees it */
	int64_t started_us, settle_deadline_ms;
	struct freeze_memory before;
	unsigned commands, containers, left; /* frozen by this freeze; frozen before it */
	cJSON *flush;                        /* the thread's outcome */
};

static struct {
	enum state state;
	struct freeze_cgroups frozen; /* what boxd froze, and must thaw */
	int64_t since_ms;             /* when the freeze began (epoch) */
	int64_t until_monotonic_ms;   /* when boxd undoes it itself */
	struct call *call;            /* the freeze call not yet answered */
	struct event *limit, *settle;
} freeze;

static struct event_base *loop;
static char *state_path;
static const char *commands_dir, *shims_dir;
static int64_t limit_ms;

/* ---- the state file ---- */

static void save_state(void)
{
	cJSON *state = cJSON_CreateObject();
	cJSON_AddNumberToObject(state, "sinceMs", (double)freeze.since_ms);
	cJSON_AddNumberToObject(state, "untilMonotonicMs", (double)freeze.until_monotonic_ms);
	cJSON *dirs = cJSON_AddArrayToObject(state, "cgroups");
	for (size_t i = 0; i < freeze.frozen.count; i++) {
		cJSON *item = cJSON_CreateObject();
		cJSON_AddStringToObject(item, "dir", freeze.frozen.dirs[i]);
		cJSON_AddBoolToObject(item, "container", freeze.frozen.container[i]);
		cJSON_AddItemToArray(dirs, item);
	}
	char *text = cJSON_PrintUnformatted(state);
	cJSON_Delete(state);
	if (!io_replace_file(state_path, text, strlen(text), 0600, 0))
		log_msg(LOG_LEVEL_ERROR,
			"freeze: cannot write %s (%s): a restart of boxd would forget this freeze",
			state_path, strerror(errno));
	free(text);
}

/* Writes the cgroup's freeze setting; true when done or the cgroup is gone
 * (its command ended meanwhile: nothing left to stop or start). */
static bool set_or_gone(const char *dir, bool frozen)
{
	return cgroup_set_freeze(dir, frozen) || errno == ENOENT || errno == ENODEV;
}

/* A file from another boot (a run dir that is not a tmpfs) names cgroups
 * of that boot: its deadline, on this boot's clock, lies impossibly far. */
static bool load_state(void)
{
	size_t length = 0;
	int fd = open(state_path, O_RDONLY | O_CLOEXEC);
	char *text = fd >= 0 ? io_read_to_end(fd, 1 << 20, &length) : NULL;
	if (fd >= 0)
		close(fd);
	cJSON *state = text ? cJSON_ParseWithLength(text, length) : NULL;
	free(text);
	const cJSON *until = cJSON_GetObjectItemCaseSensitive(state, "untilMonotonicMs");
	const cJSON *dirs = cJSON_GetObjectItemCaseSensitive(state, "cgroups");
	int64_t left =
		cJSON_IsNumber(until) ? (int64_t)until->valuedouble - clock_monotonic_ms() : -1;
	bool usable = cJSON_IsArray(dirs) && cJSON_IsNumber(until) && left <= limit_ms;
	for (const cJSON *item = usable ? dirs->child : NULL; item; item = item->next) {
		const cJSON *dir = cJSON_GetObjectItemCaseSensitive(item, "dir");
		if (cJSON_IsString(dir))
			freeze_cgroups_add(
				&freeze.frozen, xstrdup(dir->valuestring),
				cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item, "container")));
	}
	if (usable) {
		freeze.until_monotonic_ms = (int64_t)until->valuedouble;
		freeze.since_ms = (int64_t)cJSON_GetNumberValue(
			cJSON_GetObjectItemCaseSensitive(state, "sinceMs"));
	}
	cJSON_Delete(state);
	return usable;
}

/* ---- the limit ---- */

static void on_limit(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what, (void)arg;
	cJSON *answer = freeze_undo("limit");
	cJSON_Delete(answer);
}

static void arm_limit(void)
{
	int64_t left = freeze.until_monotonic_ms - clock_monotonic_ms();
	if (left < 0)
		left = 0;
	struct timeval delay = {(time_t)(left / 1000), (suseconds_t)(left % 1000) * 1000};
	event_add(freeze.limit, &delay);
}

/* ---- answering ---- */

static void call_free(struct call *call)
{
	cJSON_Delete(call->flush);
	free(call);
}

static void fail_call(struct call *call, enum failure failure, const char *error)
{
	call->done(call->arg, NULL, failure, error);
	call_free(call);
}

static void answer_call(struct call *call)
{
	struct freeze_memory after = call->before;
	freeze_memory_read(&after);
	cJSON *answer = cJSON_CreateObject();
	cJSON_AddBoolToObject(answer, "frozen", true);
	cJSON_AddNumberToObject(answer, "tookMs",
				(double)((clock_monotonic_us() - call->started_us) / 1000));
	cJSON *memory = cJSON_AddObjectToObject(answer, "memory");
	cJSON_AddItemToObject(memory, "before", freeze_memory_json(&call->before));
	cJSON_AddItemToObject(memory, "after", freeze_memory_json(&after));
	cJSON *commands = cJSON_AddObjectToObject(answer, "commands");
	cJSON_AddNumberToObject(commands, "frozen", call->commands);
	cJSON_AddNumberToObject(commands, "containers", call->containers);
	cJSON_AddNumberToObject(commands, "frozenBefore", call->left);
	cJSON_AddItemToObject(answer, "flush", call->flush);
	call->flush = NULL;
	steps_add("freeze", "frozen in %.1f s: %u commands, %u containers%s",
		  (double)(clock_monotonic_us() - call->started_us) / 1e6, call->commands,
		  call->containers, call->reclaim ? ", caches dropped" : "");
	call->done(call->arg, answer, FAILURE_INTERNAL, NULL);
	call_free(call);
}

/* ---- a freeze, step by step: cgroups, settled, flushed ---- */

static void flush_work(void *arg)
{
	struct call *call = arg;
	call->flush = cJSON_CreateObject();
	freeze_flush_and_reclaim(call->reclaim, call->flush);
}

static void flushed(void *arg)
{
	struct call *call = arg;
	/* Undone meanwhile: the undo answered the call already. */
	if (freeze.call != call) {
		call_free(call);
		return;
	}
	freeze.call = NULL;
	freeze.state = FROZEN;
	answer_call(call);
}

static void start_flush(struct call *call)
{
	call->flushing = true;
	offload_run(loop, "freeze: the sync", flush_work, flushed, call);
}

/* The first cgroup not frozen yet, or NULL once all are. */
static const char *unsettled(void)
{
	/* A cgroup gone (-1) has nothing left to change anything. */
	for (size_t i = 0; i < freeze.frozen.count; i++)
		if (cgroup_keyed_value(freeze.frozen.dirs[i], "cgroup.events", "frozen") == 0)
			return freeze.frozen.dirs[i];
	return NULL;
}

static void on_settle(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what, (void)arg;
	struct call *call = freeze.call;
	const char *waiting = unsettled();
	if (!waiting) {
		start_flush(call);
		return;
	}
	if (clock_monotonic_ms() < call->settle_deadline_ms) {
		struct timeval poll = {0, SETTLE_POLL_MS * 1000};
		event_add(freeze.settle, &poll);
		return;
	}
	char error[600];
	snprintf(error, sizeof error,
		 "%s did not reach the frozen state within %d ms (a process in an "
		 "uninterruptible wait?): everything was thawed again",
		 waiting, FREEZE_SETTLE_MS);
	log_msg(LOG_LEVEL_WARNING, "freeze: %s", error);
	freeze.call = NULL;
	cJSON_Delete(freeze_undo("settle"));
	fail_call(call, FAILURE_UNAVAILABLE, error);
}

/* Freezes what is not frozen yet; what someone else froze stays theirs. */
static void freeze_cgroups(struct call *call)
{
	struct freeze_cgroups found;
	freeze_cgroups_list(commands_dir, shims_dir, &found);
	for (size_t i = 0; i < found.count; i++) {
		int setting = cgroup_freeze_setting(found.dirs[i]);
		if (setting == 1) {
			call->left++;
			continue;
		}
		if (setting < 0 || !set_or_gone(found.dirs[i], true))
			continue; /* gone meanwhile */
		/* exec's spare shims wait in cgroups of their own, frozen alike
		 * but not counted: they are boxd's, not commands. */
		const char *name = strrchr(found.dirs[i], '/') + 1;
		if (found.container[i])
			call->containers++;
		else if (exec_find(name))
			call->commands++;
		freeze_cgroups_add(&freeze.frozen, found.dirs[i], found.container[i]);
		found.dirs[i] = NULL;
	}
	freeze_cgroups_free(&found);
}

void freeze_start(bool reclaim, bool commands, freeze_done_fn done, void *arg)
{
	struct call *call = xcalloc(1, sizeof *call);
	*call = (struct call){
		.done = done, .arg = arg, .reclaim = reclaim, .started_us = clock_monotonic_us()};
	freeze_memory_read(&call->before);
	freeze.state = FREEZING;
	freeze.call = call;
	freeze.since_ms = clock_now_ms();
	freeze.until_monotonic_ms = clock_monotonic_ms() + limit_ms;
	/* Kept before the first write: a crash in between leaves nothing
	 * frozen that the next boxd does not know of. */
	save_state();
	if (commands)
		freeze_cgroups(call);
	save_state();
	arm_limit();
	call->settle_deadline_ms = clock_monotonic_ms() + FREEZE_SETTLE_MS;
	on_settle(-1, 0, NULL);
}

cJSON *freeze_undo(const char *why)
{
	cJSON *answer = cJSON_CreateObject();
	cJSON_AddBoolToObject(answer, "thawed", freeze.state != THAWED);
	if (freeze.state == THAWED)
		return answer;
	unsigned thawed = 0;
	for (size_t i = 0; i < freeze.frozen.count; i++)
		if (set_or_gone(freeze.frozen.dirs[i], false))
			thawed++;
		else
			log_msg(LOG_LEVEL_ERROR, "freeze: cannot thaw %s: %s",
				freeze.frozen.dirs[i], strerror(errno));
	int64_t frozen_ms = clock_now_ms() - freeze.since_ms;
	cJSON_AddNumberToObject(answer, "frozenMs", (double)(frozen_ms > 0 ? frozen_ms : 0));
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(answer, "commands"), "thawed", thawed);
	log_msg(strcmp(why, "limit") == 0 ? LOG_LEVEL_WARNING : LOG_LEVEL_INFO,
		"freeze undone (%s) after %lld ms: %u cgroups thawed%s", why, (long long)frozen_ms,
		thawed,
		strcmp(why, "limit") == 0 ? "; nobody thawed the box within --freeze-limit" : "");
	steps_add("freeze", "thawed (%s) after %.1f s", why, (double)frozen_ms / 1000.0);
	freeze_cgroups_free(&freeze.frozen);
	if (unlink(state_path) != 0 && errno != ENOENT)
		log_msg(LOG_LEVEL_ERROR, "freeze: cannot remove %s: %s", state_path,
			strerror(errno));
	event_del(freeze.limit);
	event_del(freeze.settle);
	freeze.state = THAWED;
	struct call *call = freeze.call;
	freeze.call = NULL;
	/* A freeze still settling ends here; one whose sync runs on its thread
	 * is answered now, and its thread's end only frees it (flushed). */
	if (call) {
		char error[160];
		snprintf(error, sizeof error, "the freeze was undone (%s) before it finished", why);
		call->done(call->arg, NULL, FAILURE_CONFLICT, error);
		call->done = NULL;
		if (!call->flushing)
			call_free(call);
	}
	return answer;
}

bool freeze_active(void)
{
	return freeze.state != THAWED;
}

static void contribute(cJSON *health)
{
	cJSON *object = cJSON_AddObjectToObject(health, "freeze");
	cJSON_AddBoolToObject(object, "frozen", freeze.state != THAWED);
	if (freeze.state != THAWED)
		cJSON_AddNumberToObject(object, "since", (double)freeze.since_ms);
}

void freeze_init(struct event_base *base, const char *run_dir, int limit_sec, const char *commands,
		 const char *shims)
{
	loop = base;
	limit_ms = (int64_t)limit_sec * 1000;
	commands_dir = commands;
	shims_dir = shims;
	state_path = xasprintf("%s/freeze.json", run_dir);
	freeze.limit = evtimer_new(base, on_limit, NULL);
	freeze.settle = evtimer_new(base, on_settle, NULL);
	health_register(contribute);
	if (access(state_path, F_OK) != 0)
		return;
	if (!load_state()) {
		log_msg(LOG_LEVEL_WARNING, "freeze: %s is from another boot or unreadable: removed",
			state_path);
		freeze_cgroups_free(&freeze.frozen);
		unlink(state_path);
		return;
	}
	freeze.state = FROZEN;
	log_msg(LOG_LEVEL_INFO,
		"freeze: the box has been frozen since before this start (%zu cgroups); thaw or "
		"init undoes it, or boxd itself in %lld s",
		freeze.frozen.count,
		(long long)((freeze.until_monotonic_ms - clock_monotonic_ms()) / 1000));
	arm_limit();
}

void freeze_stop(void)
{
	if (freeze.limit)
		event_free(freeze.limit);
	if (freeze.settle)
		event_free(freeze.settle);
	freeze.limit = freeze.settle = NULL;
}
