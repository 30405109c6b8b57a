#include "health.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "activity.h"
#include "clock.h"
#include "lock.h"
#include "probe.h"
#include "xalloc.h"

/* Measured in a booted box just after boot (and after an Xvfb restart): the
 * X server took 0.5 to 1.8 s to answer a connection setup while it was busy,
 * so 500 ms called a working display down. */
#define PROBE_TIMEOUT_MS 3000
#define X_SOCKET_DIR "/tmp/.X11-unix"
#define DOCKER_SOCKET "/var/run/docker.sock"
#define MAX_CONTRIBUTORS 16
#define MAX_WAITING 64

struct display_state {
	bool up;
	int width, height; /* 0: unknown (the server wants authorization) */
};

struct waiting {
	health_done_fn done;
	void *arg;
};

static void (*contributors[MAX_CONTRIBUTORS])(cJSON *health);
static char instance_id[64];
static int contributor_count;
static void (*activity_contributors[MAX_CONTRIBUTORS])(cJSON *activity);
static int activity_contributor_count;
static int64_t started_at_ms, started_monotonic_ms;
static char boot_id[40];
/* Given at health_init. */
static struct event_base *loop;
static const char *work_dir, *run_dir, *display_name;

static struct display_state display;
static bool docker_up;
static int64_t probed_at_ms = -1; /* monotonic; -1: never */
static int probes_running;
static bool changed_while_probing; /* the running probes may tell the old state */
static bool ask_again;             /* a probe failed at once: a server starting or just gone */
/* A server that accepted and then said nothing until the probe's timeout (a
 * stopped or wedged X server or dockerd), in the last round, or so far in
 * this one. */
static bool silent, silent_now;
/* The last probe found no socket file at all: nothing to ask until one
 * appears, which inotify tells for the display and a stat at each collect
 * tells for Docker (see missing_socket). */
static bool display_missing, docker_missing;
static char display_socket[64];
/* inotify on the X socket directory (see watch_x_dir), -1 without. */
static int watch_fd = -1;
static struct waiting waiting[MAX_WAITING];
static int waiting_count;

/* ---- the X server: the connection setup handshake, no Xlib needed ---- */

/* Little-endian setup request, protocol 11.0, no authorization. */
static const unsigned char x_setup_request[12] = {'l', 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0};

static unsigned read16(const unsigned char *p)
{
	return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static size_t x_answer_length(const unsigned char *data, size_t length)
{
	return length < 8 ? 0 : 8 + 4 * (size_t)read16(data + 6);
}

/* The first screen's size from a successful setup reply (X11 protocol,
 * "Connection Setup"): fixed 40-byte head, vendor, pixmap formats, screens. */
static void x_parse_setup(const unsigned char *reply, size_t length, struct display_state *state)
{
	state->up = true;
	state->width = state->height = 0;
	if (reply[0] != 1 || length < 40)
		return;
	size_t vendor_length = read16(reply + 24);
	size_t formats = reply[29];
	size_t screen = 40 + ((vendor_length + 3) & ~(size_t)3) + 8 * formats;
	if (reply[28] == 0 || screen + 24 > length)
		return;
	state->width = (int)read16(reply + screen + 20);
	state->height = (int)read16(reply + screen + 22);
}

/* ":99" or ":99.0" -> 99; -1 for a display that is not local. */
static int display_number(const char *name)
{
	if (name[0] != ':')
		return -1;
	char *end;
	long number = strtol(name + 1, &end, 10);
	if (end == name + 1 || (*end && *end != '.') || number < 0 || number > 65535)
		return -1;
	return (int)number;
}

/* ---- Docker: its API answers GET /_ping ---- */

static const char docker_ping[] = "GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n";

static size_t docker_answer_length(const unsigned char *data, size_t length)
{
	/* The status line is all we need. */
	const void *end = memchr(data, '\n', length);
	return end ? (size_t)((const unsigned char *)end - data + 1) : 0;
}

/* ---- collecting ---- */

/* Numbers are written as raw digits: cJSON prints a double with a sprintf
 * and checks it with an sscanf, which was a third of a health answer's time. */
static void add_number(cJSON *object, const char *name, double value)
{
	char digits[32];
	if (value == (double)(int64_t)value)
		snprintf(digits, sizeof digits, "%lld", (long long)value);
	else
		snprintf(digits, sizeof digits, "%.15g", value);
	cJSON_AddRawToObject(object, name, digits);
}

/* Load, memory and disk change slowly; they are sampled at most once per
 * SYSTEM_FRESH_MS so that a caller polling health costs boxd almost nothing. */
#define SYSTEM_FRESH_MS 1000

/* The filesystems boxd writes to: the work dir (logs, uploads), the run
 * dir (command state, sockets) and /tmp (commands' scratch). */
#define DISK_COUNT 3
/* Less free than this is full: no state file, log line or upload fits. */
#define DISK_FULL_BELOW (1024.0 * 1024)

struct disk_sample {
	const char *path;
	bool known;
	double total, free;
};

struct system_sample {
	int64_t taken_ms; /* monotonic; 0: never */
	double loads[3];
	double total_memory, available_memory;
	struct disk_sample disks[DISK_COUNT];
};

static struct system_sample system_sample;
static int meminfo_fd = -1;

/* MemAvailable is the kernel's own estimate of memory a new job can use. */
static double read_available_memory(const struct sysinfo *info)
{
	char text[4096];
	if (meminfo_fd < 0)
		meminfo_fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	ssize_t n = meminfo_fd >= 0 ? pread(meminfo_fd, text, sizeof text - 1, 0) : -1;
	if (n > 0) {
		text[n] = '\0';
		const char *line = strstr(text, "MemAvailable:");
		if (line)
			return strtod(line + 13, NULL) * 1024;
	}
	return (double)(info->freeram + info->bufferram) * info->mem_unit;
}

static void sample_system(void)
{
	struct system_sample *sample = &system_sample;
	struct sysinfo info;
	if (sysinfo(&info) == 0) {
		for (int i = 0; i < 3; i++) {
			double load = (double)info.loads[i] / (1 << SI_LOAD_SHIFT);
			sample->loads[i] =
				(double)(int64_t)(load * 100 + 0.5) / 100; /* 2 decimals */
		}
		sample->total_memory = (double)info.totalram * info.mem_unit;
		sample->available_memory = read_available_memory(&info);
	}
	const char *paths[DISK_COUNT] = {work_dir, run_dir, "/tmp"};
	for (int i = 0; i < DISK_COUNT; i++) {
		struct disk_sample *disk = &sample->disks[i];
		struct statvfs fs;
		disk->path = paths[i];
		disk->known = statvfs(paths[i], &fs) == 0;
		if (disk->known) {
			disk->total = (double)fs.f_blocks * fs.f_frsize;
			disk->free = (double)fs.f_bavail * fs.f_frsize;
		}
	}
	sample->taken_ms = clock_monotonic_ms();
}

static void add_disk(cJSON *object, const struct disk_sample *disk)
{
	cJSON_AddStringToObject(object, "path", disk->path);
	if (disk->known) {
		add_number(object, "totalBytes", disk->total);
		add_number(object, "freeBytes", disk->free);
	} else {
		cJSON_AddNullToObject(object, "totalBytes");
		cJSON_AddNullToObject(object, "freeBytes");
	}
}

static void add_system(cJSON *health)
{
	if (!system_sample.taken_ms ||
	    clock_monotonic_ms() - system_sample.taken_ms >= SYSTEM_FRESH_MS)
		sample_system();
	const struct system_sample *sample = &system_sample;
	cJSON *load = cJSON_AddArrayToObject(health, "load");
	for (int i = 0; i < 3; i++) {
		char digits[32];
		snprintf(digits, sizeof digits, "%.2f", sample->loads[i]);
		cJSON_AddItemToArray(load, cJSON_CreateRaw(digits));
	}
	cJSON *memory = cJSON_AddObjectToObject(health, "memory");
	add_number(memory, "totalBytes", sample->total_memory);
	add_number(memory, "availableBytes", sample->available_memory);
	add_disk(cJSON_AddObjectToObject(health, "disk"), &sample->disks[0]);
	/* All of them, so a full run dir or /tmp shows too (the contract's
	 * `disk` is the work dir's alone). */
	cJSON *disks = cJSON_AddArrayToObject(health, "disks");
	for (int i = 0; i < DISK_COUNT; i++) {
		cJSON *item = cJSON_CreateObject();
		add_disk(item, &sample->disks[i]);
		cJSON_AddBoolToObject(item, "full",
				      sample->disks[i].known &&
					      sample->disks[i].free < DISK_FULL_BELOW);
		cJSON_AddItemToArray(disks, item);
	}
}

static void add_display(cJSON *health)
{
	cJSON *object = cJSON_AddObjectToObject(health, "display");
	cJSON_AddStringToObject(object, "name", display_name);
	cJSON_AddBoolToObject(object, "up", display.up);
	if (display.up && display.width) {
		add_number(object, "width", display.width);
		add_number(object, "height", display.height);
	} else {
		cJSON_AddNullToObject(object, "width");
		cJSON_AddNullToObject(object, "height");
	}
}

static int running_procs(cJSON *health)
{
	cJSON *procs = cJSON_GetObjectItem(health, "procs");
	cJSON *running = procs ? cJSON_GetObjectItem(procs, "running") : NULL;
	double value = cJSON_GetNumberValue(running); /* NaN when not a number */
	return value == value ? (int)value : 0;
}

static void add_activity(cJSON *health)
{
	cJSON *activity = cJSON_AddObjectToObject(health, "activity");
	activity_describe(activity, running_procs(health) > 0);
	for (int i = 0; i < activity_contributor_count; i++)
		activity_contributors[i](activity);
}

static cJSON *health_build(void)
{
	cJSON *health = cJSON_CreateObject();
	cJSON_AddBoolToObject(health, "ok", true);
	cJSON_AddStringToObject(health, "version", BOXD_VERSION);
	cJSON_AddStringToObject(health, "bootId", boot_id);
	cJSON_AddStringToObject(health, "instanceId", instance_id);
	add_number(health, "startedAt", (double)started_at_ms);
	add_number(health, "uptimeMs", (double)(clock_monotonic_ms() - started_monotonic_ms));
	add_display(health);
	cJSON *docker = cJSON_AddObjectToObject(health, "docker");
	cJSON_AddBoolToObject(docker, "up", docker_up);
	add_system(health);
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(health, "procs"), "running", 0);
	cJSON_AddBoolToObject(health, "recording", false);
	cJSON_AddBoolToObject(health, "locked", lock_is_locked());
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(health, "secrets"), "count", 0);
	for (int i = 0; i < contributor_count; i++)
		contributors[i](health);
	add_activity(health);
	return health;
}

static void answer_waiting(void)
{
	/* Copy first: a `done` may collect again and queue a new waiter. */
	struct waiting ready[MAX_WAITING];
	int count = waiting_count;
	memcpy(ready, waiting, sizeof ready);
	waiting_count = 0;
	for (int i = 0; i < count; i++)
		ready[i].done(health_build(), ready[i].arg);
}

static void probe_finished(void)
{
	if (--probes_running == 0) {
		probed_at_ms = clock_monotonic_ms();
		if (changed_while_probing || ask_again)
			probed_at_ms -= HEALTH_PROBE_FRESH_MS;
		changed_while_probing = ask_again = false;
		silent = silent_now;
		silent_now = false;
		answer_waiting();
	}
}

/* A probe that failed without timing out (no socket, nobody listening,
 * closed early) is not kept: asking again costs a connect, and the server
 * may be starting (its socket file comes before it answers) or killed
 * outright (its socket file stays). A silent server (timed out) is kept. */
/* A probe that failed at once because its socket file is not there: not
 * worth asking again at every call (a connect, a turn of the loop) while
 * the file stays away. */
static bool missing_socket(const char *path, bool answered, bool timed_out)
{
	struct stat info;
	return !answered && !timed_out && path[0] && stat(path, &info) != 0 && errno == ENOENT;
}

static void on_display_probe(void *arg, bool answered, bool timed_out, const unsigned char *answer,
			     size_t length)
{
	/* Missing, the display's socket is waited for by inotify, if it can. */
	display_missing = missing_socket(display_socket, answered, timed_out) && watch_fd >= 0;
	ask_again |= !answered && !timed_out && !display_missing;
	silent_now |= timed_out;
	display.up = answered;
	display.width = display.height = 0;
	if (answered)
		x_parse_setup(answer, length, &display);
	probe_finished();
}

static void on_docker_probe(void *arg, bool answered, bool timed_out, const unsigned char *answer,
			    size_t length)
{
	docker_missing = missing_socket(DOCKER_SOCKET, answered, timed_out);
	ask_again |= !answered && !timed_out && !docker_missing;
	silent_now |= timed_out;
	docker_up = answered && length >= 12 && memcmp(answer, "HTTP/1.", 7) == 0 &&
		    memcmp(answer + 8, " 200", 4) == 0;
	probe_finished();
}

/* ---- noticing a display that comes or goes ----
 *
 * The X server's socket appears when it starts and vanishes when it stops
 * cleanly: inotify on /tmp/.X11-unix makes the next answer probe anew, so
 * the change shows at once (a server killed outright leaves its socket file,
 * and a probe refused at once is asked again at every call). Docker's
 * socket lives in /run, where files come and go all day: watching it would
 * wake an idle boxd, so Docker's changes show at the next probe (within
 * HEALTH_PROBE_FRESH_MS; at once while Docker is down). */

static struct event *watch_event;
static int x_dir_watch = -1, tmp_watch = -1;

/* /tmp itself is watched only while /tmp/.X11-unix does not exist (to see
 * it appear): files come and go in /tmp all day, and an idle boxd must not
 * wake for them. */
static void watch_x_dir(void)
{
	x_dir_watch = inotify_add_watch(watch_fd, X_SOCKET_DIR,
					IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM |
						IN_DELETE_SELF);
	if (x_dir_watch >= 0 && tmp_watch >= 0) {
		inotify_rm_watch(watch_fd, tmp_watch);
		tmp_watch = -1;
	} else if (x_dir_watch < 0 && tmp_watch < 0) {
		tmp_watch = inotify_add_watch(watch_fd, "/tmp", IN_CREATE | IN_MOVED_TO);
	}
}

static void on_socket_dirs(evutil_socket_t fd, short what, void *arg)
{
	char buffer[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;
	bool changed = false, rewatch = false;
	while ((n = read(fd, buffer, sizeof buffer)) > 0) {
		for (char *at = buffer; at < buffer + n;) {
			const struct inotify_event *event = (const struct inotify_event *)at;
			at += sizeof *event + event->len;
			if (event->wd == tmp_watch && event->len &&
			    !strcmp(event->name, ".X11-unix")) {
				rewatch = true; /* made after boxd started: watch it now */
			} else if (event->wd == x_dir_watch && (event->mask & IN_IGNORED)) {
				x_dir_watch = -1; /* removed: watch /tmp for its return */
				rewatch = changed = true;
			} else if (event->len && event->name[0] == 'X') {
				changed = true;
			}
		}
	}
	if (rewatch && x_dir_watch < 0)
		watch_x_dir();
	if (changed)
		health_invalidate();
}

static void watch_sockets(void)
{
	watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (watch_fd < 0)
		return; /* changes then show within HEALTH_PROBE_FRESH_MS */
	watch_x_dir();
	watch_event = event_new(loop, watch_fd, EV_READ | EV_PERSIST, on_socket_dirs, NULL);
	event_add(watch_event, NULL);
}

static void start_probes(void)
{
	char path[64];
	int number = display_number(display_name);
	probes_running = 2;
	if (number >= 0) {
		snprintf(path, sizeof path, X_SOCKET_DIR "/X%d", number);
		snprintf(display_socket, sizeof display_socket, "%s", path);
		struct probe_spec x = {path, x_setup_request, sizeof x_setup_request,
				       x_answer_length, PROBE_TIMEOUT_MS};
		probe_run(loop, &x, on_display_probe, NULL);
	} else {
		display.up = false;
		probes_running--;
	}
	struct probe_spec docker = {DOCKER_SOCKET, docker_ping, sizeof docker_ping - 1,
				    docker_answer_length, PROBE_TIMEOUT_MS};
	probe_run(loop, &docker, on_docker_probe, NULL);
}

/* Probe results are served while fresh (HEALTH_PROBE_FRESH_MS). Once stale,
 * the answer waits for a new probe, so a display or Docker that came or went
 * shows in the very next answer. A probe is one local connect and a few
 * bytes (well under a millisecond); an absent or refused socket fails at
 * once, and only a hung server costs the probe's timeout: once, the first
 * time it is seen (see below). */
void health_collect(health_done_fn done, void *arg)
{
	/* A socket that came or went before this call must count even if the
	 * loop has not got to its inotify event yet: one read, usually EAGAIN. */
	if (watch_fd >= 0)
		on_socket_dirs(watch_fd, EV_READ, NULL);
	struct stat info;
	if (docker_missing && stat(DOCKER_SOCKET, &info) == 0)
		health_invalidate(); /* Docker has come since the last probe */
	bool stale =
		probed_at_ms < 0 || clock_monotonic_ms() - probed_at_ms >= HEALTH_PROBE_FRESH_MS;
	if (!stale || waiting_count == MAX_WAITING) {
		done(health_build(), arg);
		return;
	}
	if (probes_running == 0)
		start_probes();
	/* Behind a silent server every caller would wait out the probe's
	 * timeout, one after another: the control plane would call the whole
	 * box unresponsive for a wedged display. Its last state (down) is
	 * served at once while the new probe runs; its return shows once that
	 * probe has an answer. */
	if (silent) {
		done(health_build(), arg);
		return;
	}
	waiting[waiting_count++] = (struct waiting){done, arg};
}

void health_set_instance_id(const char *id)
{
	snprintf(instance_id, sizeof instance_id, "%s", id);
}

void health_register_activity(void (*contribute)(cJSON *activity))
{
	if (activity_contributor_count < MAX_CONTRIBUTORS)
		activity_contributors[activity_contributor_count++] = contribute;
}

void health_register(void (*contribute)(cJSON *health))
{
	if (contributor_count < MAX_CONTRIBUTORS)
		contributors[contributor_count++] = contribute;
}

void health_invalidate(void)
{
	/* The next collect probes anew before it answers. */
	if (probed_at_ms >= 0)
		probed_at_ms = clock_monotonic_ms() - HEALTH_PROBE_FRESH_MS;
	if (probes_running)
		changed_while_probing = true;
}

static void read_boot_id(void)
{
	FILE *file = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (file) {
		if (!fgets(boot_id, sizeof boot_id, file))
			boot_id[0] = '\0';
		fclose(file);
	}
	boot_id[strcspn(boot_id, "\n")] = '\0';
}

void health_init(struct event_base *base, const char *work, const char *run,
		 const char *display_setting)
{
	loop = base;
	work_dir = work;
	run_dir = run;
	display_name = display_setting;
	started_at_ms = clock_now_ms();
	started_monotonic_ms = clock_monotonic_ms();
	read_boot_id();
	watch_sockets();
	start_probes();
}

void health_stop(void)
{
	if (watch_event)
		event_free(watch_event);
	watch_event = NULL;
	if (watch_fd >= 0)
		close(watch_fd);
	watch_fd = -1;
	probe_cancel_all();
	probes_running = 0;
	answer_waiting();
	if (meminfo_fd >= 0)
		close(meminfo_fd);
	meminfo_fd = -1;
}
