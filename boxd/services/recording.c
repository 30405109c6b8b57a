/* recording.c: one screen recording at a time, as boxd knows it (see
 * recording.h); the worker's side is boxd/screen/record.c. */
#include "recording.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "activity.h"
#include "clock.h"
#include "health.h"
#include "random-id.h"
#include "steps.h"
#include "xalloc.h"

/* The figures of a recording that ended by itself, until a stop collects
 * them; `figures`' strings point at the copies here. */
struct recording_ended {
	char *id, *path, *ended_by, *error;
	struct screen_record_figures figures;
};

/* A caller waiting for the worker's answer. */
struct recording_call {
	union {
		recording_started_fn started;
		recording_figures_fn figures;
	} done;
	void *arg;
};

static struct {
	bool starting, running, stopping;
	char *id;
	char *path;
	struct recording_ended *ended;
} recording;

static const char *work_dir;

static struct recording_call *recording_call_new(void *arg)
{
	struct recording_call *call = xcalloc(1, sizeof *call);
	call->arg = arg;
	return call;
}

/* ---- the state ---- */

/* The recording is use of the box (activity) from its start to its end. */
static void recording_set_running(bool running)
{
	if (running != recording.running)
		(running ? activity_begin : activity_end)(ACTIVITY_RECORDING);
	recording.running = running;
}

static void recording_clear(void)
{
	recording_set_running(false);
	free(recording.id);
	free(recording.path);
	recording.id = recording.path = NULL;
	recording.stopping = false;
}

static void recording_ended_free(struct recording_ended *ended)
{
	if (!ended)
		return;
	free(ended->id);
	free(ended->path);
	free(ended->ended_by);
	free(ended->error);
	free(ended);
}

static char *recording_copy(const char *text)
{
	return text ? xstrdup(text) : NULL;
}

/* The running recording ended by itself (`why`, for the step): its figures
 * wait for the next stop, and another may start. */
static void recording_keep_ended(const struct screen_record_figures *figures, const char *why)
{
	struct recording_ended *ended = xcalloc(1, sizeof *ended);
	ended->figures = *figures;
	ended->id = recording_copy(recording.id);
	ended->figures.path = ended->path = recording_copy(figures->path);
	ended->figures.ended_by = ended->ended_by = recording_copy(figures->ended_by);
	ended->figures.error = ended->error = recording_copy(figures->error);
	recording_ended_free(recording.ended);
	recording.ended = ended;
	steps_add("record", "recording %s ended by itself (%s) after %.1f s", recording.id, why,
		  (double)figures->duration_ms / 1000.0);
	recording_clear();
}

/* Hands the figures of a recording that ended by itself to `done`, once.
 * False when there are none. */
static bool recording_give_ended(recording_figures_fn done, void *arg)
{
	struct recording_ended *ended = recording.ended;
	if (!ended)
		return false;
	recording.ended = NULL;
	done(arg, ended->id, &ended->figures, NULL);
	recording_ended_free(ended);
	return true;
}

/* ---- the worker's reports, health ---- */

static void recording_on_ended(const struct screen_record_figures *figures)
{
	if (recording.running)
		recording_keep_ended(figures, figures->ended_by ? figures->ended_by : "?");
}

static void recording_on_worker_exit(const char *why)
{
	if (!recording.running)
		return;
	/* The file stays playable up to its last complete second. */
	struct stat info;
	struct screen_record_figures figures = {
		.path = recording.path,
		.bytes = stat(recording.path, &info) == 0 ? (int64_t)info.st_size : 0,
		.ended_by = "display_lost",
		.error = why,
	};
	recording_keep_ended(&figures, "the screen worker stopped");
}

static void recording_health(cJSON *health)
{
	cJSON_ReplaceItemInObjectCaseSensitive(health, "recording",
					       cJSON_CreateBool(recording.running));
}

void recording_init(const char *work)
{
	static const struct screen_client_listener listener = {
		.record_ended = recording_on_ended,
		.worker_exit = recording_on_worker_exit,
	};
	work_dir = work;
	screen_client_listen(&listener);
	health_register(recording_health);
}

/* ---- start ---- */

/* Creates WORK/.sbx/recordings and names a new file there. */
static bool recording_new(char **id, char **path, char *error, size_t error_size)
{
	char *sbx = xasprintf("%s/.sbx", work_dir);
	char *directory = xasprintf("%s/.sbx/recordings", work_dir);
	bool ok = (mkdir(sbx, 0755) == 0 || errno == EEXIST) &&
		  (mkdir(directory, 0755) == 0 || errno == EEXIST);
	if (!ok)
		snprintf(error, error_size, "cannot create %s: %s", directory, strerror(errno));
	char random[9];
	random_hex(random, 4);
	*id = xasprintf("r_%" PRIx64 "%s", (uint64_t)clock_now_ms(), random);
	*path = xasprintf("%s/%s.mp4", directory, *id);
	free(sbx);
	free(directory);
	return ok;
}

static void recording_on_started(void *arg, const struct screen_record_figures *figures,
				 const struct screen_failure *failed)
{
	struct recording_call *call = arg;
	recording.starting = false;
	if (failed) {
		steps_add("record", "recording could not start: %s", failed->message);
		recording_clear();
		call->done.started(call->arg, NULL, failed);
		free(call);
		return;
	}
	recording_set_running(true);
	steps_add("record", "recording %s started at %d fps (%dx%d)", recording.id, figures->fps,
		  figures->width, figures->height);
	struct recording_started started = {
		.id = recording.id,
		.path = recording.path,
		.started_at = figures->started_at,
		.fps = figures->fps,
		.width = figures->width,
		.height = figures->height,
	};
	call->done.started(call->arg, &started, NULL);
	free(call);
}

void recording_start(const cJSON *fps, const cJSON *max_sec, recording_started_fn done, void *arg)
{
	char message[300];
	struct screen_failure failed = {FAILURE_CONFLICT, message};
	if (recording.starting || recording.running) {
		snprintf(message, sizeof message, "recording %s is already running; stop it first",
			 recording.id);
		done(arg, NULL, &failed);
		return;
	}
	if (!recording_new(&recording.id, &recording.path, message, sizeof message)) {
		recording_clear();
		failed.failure = FAILURE_INTERNAL;
		done(arg, NULL, &failed);
		return;
	}
	/* Cleared by the answer; a second start meanwhile is a conflict. */
	recording_ended_free(recording.ended);
	recording.ended = NULL;
	recording.starting = true;
	struct recording_call *call = recording_call_new(arg);
	call->done.started = done;
	screen_record_start(recording.path, fps, max_sec, recording_on_started, call);
}

/* ---- stop and status ---- */

static void recording_on_stopped(void *arg, const struct screen_record_figures *figures,
				 const struct screen_failure *failed)
{
	struct recording_call *call = arg;
	recording_figures_fn done = call->done.figures;
	void *caller = call->arg;
	free(call);
	if (failed) {
		/* A recording that ended meanwhile is collected from `ended`. */
		if (recording_give_ended(done, caller))
			return;
		recording.stopping = false;
		done(caller, NULL, NULL, failed);
		return;
	}
	steps_add("record", "recording %s stopped: %.1f s, %.0f frames, %.0f KiB", recording.id,
		  (double)figures->duration_ms / 1000.0, (double)figures->frames,
		  (double)figures->bytes / 1024.0);
	char *id = recording.id;
	recording.id = NULL;
	recording_clear();
	done(caller, id, figures, NULL);
	free(id);
}

void recording_stop(recording_figures_fn done, void *arg)
{
	if (recording_give_ended(done, arg))
		return;
	char message[100];
	struct screen_failure failed = {FAILURE_CONFLICT, message};
	if (recording.starting || recording.stopping) {
		snprintf(message, sizeof message, "the recording is %s; try again in a moment",
			 recording.starting ? "starting" : "already stopping");
		done(arg, NULL, NULL, &failed);
		return;
	}
	if (!recording.running) {
		snprintf(message, sizeof message, "no recording is running");
		done(arg, NULL, NULL, &failed);
		return;
	}
	recording.stopping = true;
	struct recording_call *call = recording_call_new(arg);
	call->done.figures = done;
	screen_record_stop(recording_on_stopped, call);
}

static void recording_on_status(void *arg, const struct screen_record_figures *figures,
				const struct screen_failure *failed)
{
	struct recording_call *call = arg;
	/* One that ended meanwhile is not running, whatever the worker said. */
	bool running = figures && recording.running;
	call->done.figures(call->arg, running ? recording.id : NULL, running ? figures : NULL,
			   failed);
	free(call);
}

void recording_status(recording_figures_fn done, void *arg)
{
	if (!recording.running) {
		done(arg, NULL, NULL, NULL);
		return;
	}
	struct recording_call *call = recording_call_new(arg);
	call->done.figures = done;
	screen_record_status(recording_on_status, call);
}
