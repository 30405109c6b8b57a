/* screen-client.c: boxd-screen's client: its requests, answers and
 * reports, in frames over a non-blocking socketpair (bufferevent); the
 * worker's life around them (started on demand, retired when idle, killed
 * when stuck). Starting it is screen-spawn.c's. */
#include "screen-client.h"
#include "screen-client-internal.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "failure.h"
#include "health.h"
#include "helpers.h"
#include "log.h"
#include "protect.h"
#include "screen-protocol.h"
#include "screen-spawn.h"
#include "xalloc.h"

/* After EOF the worker's exit is awaited this long (its pidfd). */
/* A held worker that exited is started again after this long. */
#define SCREEN_HOLD_RESTART_MS 1000
#define SCREEN_EXIT_WAIT_MS 1000
/* A worker that answers nothing for this long is stuck (an X server that
 * accepts but never replies): it is killed and the waiting calls fail. The
 * longest legitimate request (input: 60 s of waits, 16 KiB of typing) is
 * well under it. */
#define SCREEN_STUCK_SECONDS 180

struct screen_worker_process {
	pid_t pid;
	struct bufferevent *channel;
	struct screen_call *calls, **calls_tail;
	struct helper_exit_watch *exit_watch; /* once its end has closed */
	struct event *watchdog;               /* armed only while calls wait */
	bool retired;                         /* closed by boxd because it was idle */
};

static struct screen_worker_process *current; /* NULL: not running */
static uint32_t last_id;
static const struct screen_client_listener *listeners[SCREEN_CLIENT_LISTENERS];
static int listener_count;
/* Given at screen_client_init. */
static struct event_base *loop;
static const char *display_name;
static int idle_seconds;
/* screen_client_hold: a worker is kept running. */
static bool held;
static struct event *hold_restart;

static struct screen_worker_process *screen_worker_start(bool warm, char *error, size_t error_size);
static void screen_worker_launched(void);
static void screen_on_hold_restart(evutil_socket_t fd, short what, void *arg);

void screen_client_init(struct event_base *base, const char *display, int idle_sec)
{
	loop = base;
	display_name = display;
	idle_seconds = idle_sec;
}

void screen_client_start_ahead(void)
{
	/* Warming up while boxd starts, so the first shot does not wait for
	 * the worker's libraries, X connection and encoder. */
	if (!current && display_name && display_name[0] && screen_display_present(display_name)) {
		char error[256];
		current = screen_worker_start(true, error, sizeof error);
		if (!current)
			log_msg(LOG_LEVEL_WARNING, "%s", error);
		else
			screen_worker_launched();
	}
}

void screen_client_listen(const struct screen_client_listener *listener)
{
	if (listener_count == SCREEN_CLIENT_LISTENERS)
		abort(); /* a fixed, small set of services listen */
	listeners[listener_count++] = listener;
}

/* Answers `call` with an error of boxd's own (the worker could not be
 * started, or went away), in the worker's words, so one reader serves. */
static void screen_answer_error(const struct screen_call *call, enum failure failure,
				const char *message)
{
	cJSON *answer = cJSON_CreateObject();
	cJSON *error = cJSON_AddObjectToObject(answer, "error");
	cJSON_AddStringToObject(error, "code", failure_code(failure));
	cJSON_AddStringToObject(error, "message", message);
	call->answered(call, answer, NULL, 0);
	cJSON_Delete(answer);
}

static void screen_read_figures(const cJSON *json, struct screen_record_figures *figures);
static void screen_tell_live(const cJSON *event, const void *payload, size_t length);

/* A report from the worker ({"event": ...} but "idle"), told to those it
 * concerns. */
static void screen_tell(const cJSON *event, const void *payload, size_t length)
{
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(event, "event"));
	if (name && strcmp(name, "display") == 0) {
		/* The display came or went: the next health call probes anew. */
		health_invalidate();
	} else if (name && strcmp(name, "record_ended") == 0) {
		struct screen_record_figures figures;
		screen_read_figures(event, &figures);
		for (int i = 0; i < listener_count; i++)
			if (listeners[i]->record_ended)
				listeners[i]->record_ended(&figures);
	} else if (name && strcmp(name, "live") == 0) {
		screen_tell_live(event, payload, length);
	} else if (name && strcmp(name, "clipboard") == 0) {
		const char *selection =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(event, "selection"));
		for (int i = 0; i < listener_count && selection; i++)
			if (listeners[i]->clipboard_changed)
				listeners[i]->clipboard_changed(selection);
	}
}

/* The worker went away: `why` says how. */
static void screen_tell_exit(const char *why)
{
	health_invalidate();
	for (int i = 0; i < listener_count; i++)
		if (listeners[i]->worker_exit)
			listeners[i]->worker_exit(why);
}

/* Every call still waiting gets `message`; the process record goes. */
static void screen_worker_forget(struct screen_worker_process *worker, enum failure failure,
				 const char *message)
{
	struct screen_call *call = worker->calls;
	while (call) {
		struct screen_call *next = call->next;
		screen_answer_error(call, failure, message);
		free(call);
		call = next;
	}
	free(worker);
}

/* A held worker exited: another, a moment later (not at once: a worker
 * that cannot run would be started in a loop). */
static void screen_hold_restart_later(void)
{
	if (!held || !loop)
		return;
	if (!hold_restart)
		hold_restart = evtimer_new(loop, screen_on_hold_restart, NULL);
	struct timeval later = {0, SCREEN_HOLD_RESTART_MS * 1000};
	evtimer_add(hold_restart, &later);
}

/* The worker's exit status (-1: unknown, it did not exit in time). */
static void screen_worker_exited(int status, void *arg)
{
	struct screen_worker_process *worker = arg;
	unprotect_process(worker->pid);
	screen_hold_restart_later();
	if (worker->retired && status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		log_msg(LOG_LEVEL_INFO, "the screen worker (pid %d) exited after %d s unused",
			(int)worker->pid, idle_seconds);
		screen_worker_forget(worker, FAILURE_INTERNAL, "the screen worker exited");
		return;
	}
	char message[200];
	enum failure failure = screen_exit_meaning(status, message, sizeof message);
	log_msg(failure == FAILURE_DISPLAY_UNAVAILABLE ? LOG_LEVEL_INFO : LOG_LEVEL_WARNING,
		"screen worker %d: %s", (int)worker->pid, message);
	screen_tell_exit(message);
	screen_worker_forget(worker, failure, message);
}

/* The worker's end closed (it exited) or the frames stopped making sense. */
static void screen_worker_lost(struct screen_worker_process *worker)
{
	if (current == worker)
		current = NULL;
	event_free(worker->watchdog);
	worker->watchdog = NULL;
	bufferevent_free(worker->channel);
	worker->channel = NULL;
	worker->exit_watch = helper_watch_exit(loop, worker->pid, SCREEN_EXIT_WAIT_MS,
					       screen_worker_exited, worker);
}

static void screen_on_stuck(evutil_socket_t fd, short what, void *arg)
{
	struct screen_worker_process *worker = arg;
	log_msg(LOG_LEVEL_ERROR,
		"the screen worker (pid %d) answered nothing for %d s; restarting it",
		(int)worker->pid, SCREEN_STUCK_SECONDS);
	kill(worker->pid, SIGKILL);
}

/* (Re)arms the watchdog while calls wait, stops it when none do. */
static void screen_watch_calls(struct screen_worker_process *worker)
{
	if (worker->calls) {
		struct timeval limit = {SCREEN_STUCK_SECONDS, 0};
		evtimer_add(worker->watchdog, &limit);
	} else {
		evtimer_del(worker->watchdog);
	}
}

/* The worker says it has been quiet (no request, nothing recording) for
 * the idle time: closing its end makes it exit, its memory given back. A
 * call sent meanwhile keeps it; it says so again after the next quiet time. */
static void screen_worker_on_idle(struct screen_worker_process *worker)
{
	/* Held: a hold sent meanwhile crossed this report. */
	if (worker != current || worker->calls || held)
		return;
	worker->retired = true;
	screen_worker_lost(worker);
}

static void screen_deliver(struct screen_worker_process *worker, cJSON *message,
			   const void *payload, size_t length)
{
	const char *event =
		cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(message, "event"));
	if (event && strcmp(event, "idle") == 0) {
		screen_worker_on_idle(worker);
		return;
	}
	if (cJSON_GetObjectItemCaseSensitive(message, "event")) {
		screen_tell(message, payload, length);
		return;
	}
	double id = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(message, "id"));
	struct screen_call **link = &worker->calls;
	while (*link && (double)(*link)->id != id)
		link = &(*link)->next;
	struct screen_call *call = *link;
	if (!call) {
		log_msg(LOG_LEVEL_WARNING, "the screen worker answered an unknown request");
		return;
	}
	*link = call->next;
	if (worker->calls_tail == &call->next)
		worker->calls_tail = link;
	screen_watch_calls(worker);
	call->answered(call, message, payload, length);
	free(call);
}

static void screen_on_read(struct bufferevent *channel, void *arg)
{
	struct screen_worker_process *worker = arg;
	struct evbuffer *input = bufferevent_get_input(channel);
	for (;;) {
		struct screen_frame_header header;
		if (evbuffer_copyout(input, &header, sizeof header) < (ssize_t)sizeof header)
			return;
		if (header.json_length == 0 || header.json_length > SCREEN_FRAME_MAX_JSON ||
		    header.payload_length > SCREEN_FRAME_MAX_PAYLOAD) {
			log_msg(LOG_LEVEL_ERROR,
				"the screen worker sent a malformed frame; restarting it");
			kill(worker->pid, SIGKILL);
			screen_worker_lost(worker);
			return;
		}
		size_t whole = sizeof header + header.json_length + header.payload_length;
		if (evbuffer_get_length(input) < whole) {
			/* Read a large image in one go rather than in 16 KiB steps. */
			bufferevent_setwatermark(channel, EV_READ, whole, 0);
			return;
		}
		bufferevent_setwatermark(channel, EV_READ, 0, 0);
		uint8_t *frame = evbuffer_pullup(input, (ssize_t)whole);
		char *text = xstrndup((const char *)frame + sizeof header, header.json_length);
		cJSON *message = cJSON_Parse(text);
		free(text);
		if (!cJSON_IsObject(message)) {
			cJSON_Delete(message);
			log_msg(LOG_LEVEL_ERROR,
				"the screen worker sent a frame that is not JSON; restarting it");
			kill(worker->pid, SIGKILL);
			screen_worker_lost(worker);
			return;
		}
		screen_deliver(worker, message, frame + sizeof header + header.json_length,
			       header.payload_length);
		cJSON_Delete(message);
		evbuffer_drain(input, whole);
		if (current != worker)
			return; /* a callback restarted or dropped it */
	}
}

static void screen_on_channel_event(struct bufferevent *channel, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		screen_worker_lost(arg);
}

static struct screen_worker_process *screen_worker_start(bool warm, char *error, size_t error_size)
{
	pid_t pid;
	int fd = screen_spawn(display_name, idle_seconds, warm, &pid, error, error_size);
	if (fd < 0)
		return NULL;
	struct screen_worker_process *worker = xcalloc(1, sizeof *worker);
	worker->pid = pid;
	protect_process(pid);
	worker->calls_tail = &worker->calls;
	worker->channel = bufferevent_socket_new(loop, fd, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(worker->channel, screen_on_read, NULL, screen_on_channel_event, worker);
	bufferevent_enable(worker->channel, EV_READ | EV_WRITE);
	worker->watchdog = evtimer_new(loop, screen_on_stuck, worker);
	log_msg(LOG_LEVEL_INFO, "started the screen worker (pid %d) for display %s", (int)pid,
		display_name);
	return worker;
}

/* Sends `request` ({"op":..., ...}; taken over, its "id" is set here) to
 * the worker, starting the worker if needed; `call` says how its answer is
 * read and whom it goes to. */
void screen_request_with(cJSON *request, struct screen_call call, const void *payload,
			 size_t length)
{
	char error[256];
	if (!current) {
		current = screen_worker_start(false, error, sizeof error);
		if (current)
			screen_worker_launched();
	}
	if (!current) {
		cJSON_Delete(request);
		screen_answer_error(&call, FAILURE_INTERNAL, error);
		return;
	}
	struct screen_call *waiting = xmalloc(sizeof *waiting);
	*waiting = call;
	waiting->id = ++last_id;
	waiting->next = NULL;
	*current->calls_tail = waiting;
	current->calls_tail = &waiting->next;
	/* New calls do not push a stuck worker's deadline further; answers do. */
	if (!evtimer_pending(current->watchdog, NULL))
		screen_watch_calls(current);
	cJSON_AddNumberToObject(request, "id", waiting->id);
	char *text = cJSON_PrintUnformatted(request);
	cJSON_Delete(request);
	struct screen_frame_header header = {(uint32_t)strlen(text), (uint32_t)length};
	bufferevent_write(current->channel, &header, sizeof header);
	bufferevent_write(current->channel, text, header.json_length);
	if (length)
		bufferevent_write(current->channel, payload, length);
	free(text);
}

static void screen_request(cJSON *request, struct screen_call call)
{
	screen_request_with(request, call, NULL, 0);
}

/* ---- reading answers ---- */

static double screen_number(const cJSON *object, const char *name)
{
	double value = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(object, name));
	return value == value ? value : 0;
}

const char *screen_string(const cJSON *object, const char *name)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(object, name));
}

/* True when `answer` is not a success; `failed` then says why (`fallback`
 * when the worker gave no sentence). The failure is the code's. */
bool screen_failed(const cJSON *answer, const char *fallback, struct screen_failure *failed)
{
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(answer, "ok")))
		return false;
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(answer, "error");
	const char *message = screen_string(error, "message");
	failed->failure = failure_from_code(screen_string(error, "code"));
	failed->message = message ? message : fallback;
	return true;
}

cJSON *screen_op(const char *op)
{
	cJSON *request = cJSON_CreateObject();
	cJSON_AddStringToObject(request, "op", op);
	return request;
}

/* ---- shots and input ---- */

static void screen_shot_answered(const struct screen_call *call, const cJSON *answer,
				 const void *payload, size_t length)
{
	struct screen_failure failed;
	if (screen_failed(answer, SCREEN_NO_REASON, &failed)) {
		call->done.shot(call->arg, NULL, &failed);
		return;
	}
	const char *type = screen_string(answer, "contentType");
	struct screen_shot shot = {
		.width = (int)screen_number(answer, "width"),
		.height = (int)screen_number(answer, "height"),
		.content_type = type ? type : "application/octet-stream",
		.cached = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(answer, "cached")),
		.data = payload,
		.length = length,
	};
	call->done.shot(call->arg, &shot, NULL);
}

void screen_shot(const struct screen_shot_options *options, screen_shot_done_fn done, void *arg)
{
	const char *const names[] = {"format", "quality", "scale", "x", "y", "w", "h", "cursor"};
	const char *const values[] = {options->format, options->quality, options->scale,
				      options->x,      options->y,       options->w,
				      options->h,      options->cursor};
	cJSON *request = screen_op("shot");
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (values[i])
			cJSON_AddStringToObject(request, names[i], values[i]);
	screen_request(request, (struct screen_call){.answered = screen_shot_answered,
						     .done.shot = done,
						     .arg = arg});
}

static void screen_input_answered(const struct screen_call *call, const cJSON *answer,
				  const void *payload, size_t length)
{
	struct screen_failure failed;
	if (screen_failed(answer, SCREEN_NO_REASON, &failed))
		call->done.input(call->arg, 0, &failed);
	else
		call->done.input(call->arg, (int)screen_number(answer, "done"), NULL);
}

void screen_input(const cJSON *actions, screen_input_done_fn done, void *arg)
{
	cJSON *request = screen_op("input");
	cJSON_AddItemToObject(request, "actions", cJSON_Duplicate(actions, true));
	screen_request(request, (struct screen_call){.answered = screen_input_answered,
						     .done.input = done,
						     .arg = arg});
}

/* ---- recording ---- */

static void screen_read_figures(const cJSON *json, struct screen_record_figures *figures)
{
	*figures = (struct screen_record_figures){
		.path = screen_string(json, "path"),
		.bytes = (int64_t)screen_number(json, "bytes"),
		.measured = true,
		.duration_ms = (int64_t)screen_number(json, "durationMs"),
		.frames = (int64_t)screen_number(json, "frames"),
		.dropped_frames = (int64_t)screen_number(json, "droppedFrames"),
		.fps = (int)screen_number(json, "fps"),
		.width = (int)screen_number(json, "width"),
		.height = (int)screen_number(json, "height"),
		.started_at = (int64_t)screen_number(json, "startedAt"),
		.ended_by = screen_string(json, "endedBy"),
		.error = screen_string(json, "error"),
	};
}

static void screen_record_answered(const struct screen_call *call, const cJSON *answer,
				   const void *payload, size_t length)
{
	struct screen_failure failed;
	struct screen_record_figures figures;
	if (screen_failed(answer, SCREEN_NO_REASON, &failed)) {
		call->done.record(call->arg, NULL, &failed);
		return;
	}
	screen_read_figures(answer, &figures);
	call->done.record(call->arg, &figures, NULL);
}

/* record_status's answer says whether one runs, with its figures if so. */
static void screen_record_status_answered(const struct screen_call *call, const cJSON *answer,
					  const void *payload, size_t length)
{
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(answer, "ok")) &&
	    !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(answer, "recording")))
		call->done.record(call->arg, NULL, NULL);
	else
		screen_record_answered(call, answer, payload, length);
}

void screen_record_start(const char *path, const cJSON *fps, const cJSON *max_sec,
			 screen_record_done_fn done, void *arg)
{
	cJSON *request = screen_op("record_start");
	cJSON_AddStringToObject(request, "path", path);
	if (fps && !cJSON_IsNull(fps))
		cJSON_AddItemToObject(request, "fps", cJSON_Duplicate(fps, true));
	if (max_sec && !cJSON_IsNull(max_sec))
		cJSON_AddItemToObject(request, "maxSec", cJSON_Duplicate(max_sec, true));
	screen_request(request, (struct screen_call){.answered = screen_record_answered,
						     .done.record = done,
						     .arg = arg});
}

void screen_record_stop(screen_record_done_fn done, void *arg)
{
	screen_request(screen_op("record_stop"),
		       (struct screen_call){.answered = screen_record_answered,
					    .done.record = done,
					    .arg = arg});
}

void screen_record_status(screen_record_done_fn done, void *arg)
{
	screen_request(screen_op("record_status"),
		       (struct screen_call){.answered = screen_record_status_answered,
					    .done.record = done,
					    .arg = arg});
}

/* ---- the live screen ---- */

static void screen_tell_live(const cJSON *event, const void *payload, size_t length)
{
	static const char *const kinds[] = {
		[SCREEN_LIVE_INIT] = "init",
		[SCREEN_LIVE_FRAGMENT] = "fragment",
		[SCREEN_LIVE_ENDED] = "ended",
	};
	double live = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(event, "live"));
	const char *kind = screen_string(event, "kind");
	if (live != live || !kind)
		return;
	struct screen_live_piece piece = {
		.live = (int)live,
		.key = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(event, "key")),
		.error = screen_string(event, "error"),
		.data = payload,
		.length = length,
	};
	size_t k = 0;
	while (k < sizeof kinds / sizeof kinds[0] && strcmp(kind, kinds[k]) != 0)
		k++;
	if (k == sizeof kinds / sizeof kinds[0])
		return;
	piece.kind = (enum screen_live_kind)k;
	for (int i = 0; i < listener_count; i++)
		if (listeners[i]->live)
			listeners[i]->live(&piece);
}

static void screen_live_answered(const struct screen_call *call, const cJSON *answer,
				 const void *payload, size_t length)
{
	struct screen_failure failed;
	if (screen_failed(answer, "the live view did not start", &failed)) {
		call->done.live(call->arg, NULL, &failed);
		return;
	}
	/* The name goes into a header: only what an avc1 name is made of. */
	const char *codec = screen_string(answer, "codec");
	bool usable = codec && strlen(codec) < 20 &&
		      codec[strspn(codec, "avc1.0123456789abcdef")] == '\0';
	struct screen_live_stream stream = {
		.width = (int)screen_number(answer, "width"),
		.height = (int)screen_number(answer, "height"),
		.started_at = (int64_t)screen_number(answer, "startedAt"),
		.codec = usable ? codec : NULL,
	};
	call->done.live(call->arg, &stream, NULL);
}

void screen_live_start(int live, int fps, double scale, screen_live_started_fn done, void *arg)
{
	cJSON *request = screen_op("live_start");
	cJSON_AddNumberToObject(request, "live", live);
	cJSON_AddNumberToObject(request, "fps", fps);
	cJSON_AddNumberToObject(request, "scale", scale);
	screen_request(request, (struct screen_call){.answered = screen_live_answered,
						     .done.live = done,
						     .arg = arg});
}

/* live_key and live_stop: their answers tell nothing the caller needs. */
void screen_ignore_answer(const struct screen_call *call, const cJSON *answer, const void *payload,
			  size_t length)
{
}

static void screen_live_tell(const char *op, int live)
{
	cJSON *request = screen_op(op);
	cJSON_AddNumberToObject(request, "live", live);
	screen_request(request, (struct screen_call){.answered = screen_ignore_answer});
}

void screen_live_key(int live)
{
	screen_live_tell("live_key", live);
}

void screen_live_stop(int live)
{
	screen_live_tell("live_stop", live);
}

/* ---- windows ---- */

/* A window's entry as the worker gave it; false when it is not one. */
static bool screen_read_window(const cJSON *json, struct screen_window *window)
{
	const char *title = screen_string(json, "title");
	const char *class_name = screen_string(json, "class");
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(json, "pid");
	double id = screen_number(json, "id");
	if (!title || !class_name || !(id > 0 && id <= UINT32_MAX))
		return false;
	*window = (struct screen_window){
		.id = (uint32_t)id,
		.title = title,
		.class_name = class_name,
		.pid = cJSON_IsNumber(pid) ? (long)pid->valuedouble : -1,
		.x = (int)screen_number(json, "x"),
		.y = (int)screen_number(json, "y"),
		.width = (int)screen_number(json, "width"),
		.height = (int)screen_number(json, "height"),
		.focused = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(json, "focused")),
		.visible = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(json, "visible")),
	};
	return true;
}

static void screen_windows_answered(const struct screen_call *call, const cJSON *answer,
				    const void *payload, size_t length)
{
	struct screen_failure failed;
	if (screen_failed(answer, SCREEN_NO_REASON, &failed)) {
		call->done.windows(call->arg, NULL, 0, &failed);
		return;
	}
	const cJSON *array = cJSON_GetObjectItemCaseSensitive(answer, "windows");
	struct screen_window *windows =
		xcalloc((size_t)cJSON_GetArraySize(array) + 1, sizeof *windows);
	size_t count = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, array)
	{
		if (screen_read_window(item, &windows[count]))
			count++;
	}
	call->done.windows(call->arg, windows, count, NULL);
	free(windows);
}

void screen_windows(screen_windows_done_fn done, void *arg)
{
	screen_request(screen_op("windows"),
		       (struct screen_call){.answered = screen_windows_answered,
					    .done.windows = done,
					    .arg = arg});
}

static void screen_window_focus_answered(const struct screen_call *call, const cJSON *answer,
					 const void *payload, size_t length)
{
	struct screen_failure failed;
	struct screen_window window;
	if (screen_failed(answer, SCREEN_NO_REASON, &failed)) {
		call->done.focus(call->arg, NULL, &failed);
	} else if (!screen_read_window(cJSON_GetObjectItemCaseSensitive(answer, "window"),
				       &window)) {
		failed = (struct screen_failure){FAILURE_INTERNAL,
						 "the screen worker answered no window"};
		call->done.focus(call->arg, NULL, &failed);
	} else {
		call->done.focus(call->arg, &window, NULL);
	}
}

void screen_window_focus(uint32_t id, screen_window_focus_done_fn done, void *arg)
{
	cJSON *request = screen_op("window_focus");
	cJSON_AddNumberToObject(request, "window", id);
	screen_request(request, (struct screen_call){.answered = screen_window_focus_answered,
						     .done.focus = done,
						     .arg = arg});
}

/* ---- holding the worker ---- */

static void screen_send_hold(void)
{
	cJSON *request = screen_op("hold");
	cJSON_AddBoolToObject(request, "hold", held);
	screen_request(request, (struct screen_call){.answered = screen_ignore_answer});
}

/* A worker was just started: a held one is told so first. */
static void screen_worker_launched(void)
{
	if (held)
		screen_send_hold();
}

static void screen_on_hold_restart(evutil_socket_t fd, short what, void *arg)
{
	if (!held || current)
		return;
	char error[256];
	current = screen_worker_start(false, error, sizeof error);
	if (!current) {
		log_msg(LOG_LEVEL_WARNING, "%s", error);
		return;
	}
	screen_worker_launched();
}

void screen_client_hold(bool hold)
{
	if (held == hold)
		return;
	held = hold;
	if (hold && !current && display_name && display_name[0]) {
		/* Started now; with no display yet it waits for one (inotify). */
		screen_on_hold_restart(-1, 0, NULL);
		return;
	}
	if (current)
		screen_send_hold();
}
