#include "health.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "boxd.h"
#include "clock.h"
#include "lock.h"
#include "probe.h"
#include "xalloc.h"

/* Measured in a booted box just after boot (and after an Xvfb restart): the
 * X server took 0.5 to 1.8 s to answer a connection setup while it was busy,
 * so 500 ms called a working display down. */
#define PROBE_TIMEOUT_MS 3000
#define MAX_CONTRIBUTORS 16
#define MAX_WAITING 64
#define KEEP_AWAKE_MS (10 * 60 * 1000)
#define KEEP_AWAKE_BACKGROUND_MS (60 * 60 * 1000)

struct display_state {
	bool up;
	bool silent; /* down because it accepted and did not answer in time */
	int width, height; /* 0: unknown (the server wants authorization) */
};

struct waiting {
	health_done_fn done;
	void *arg;
};

static void (*contributors[MAX_CONTRIBUTORS])(cJSON *health);
static int contributor_count;
static int64_t started_at_ms, started_monotonic_ms, last_call_ms;
static char boot_id[40];

static struct display_state display;
static bool docker_up, docker_silent;
static int64_t probed_at_ms = -1; /* monotonic; -1: never */
static int probes_running;
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

struct system_sample {
	int64_t taken_ms; /* monotonic; 0: never */
	double loads[3];
	double total_memory, available_memory;
	bool have_disk;
	double total_disk, free_disk;
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
		for (int i = 0; i < 3; i++)
			sample->loads[i] = (double)(int64_t)((double)info.loads[i] / (1 << SI_LOAD_SHIFT) * 100 + 0.5) / 100;
		sample->total_memory = (double)info.totalram * info.mem_unit;
		sample->available_memory = read_available_memory(&info);
	}
	struct statvfs fs;
	sample->have_disk = statvfs(boxd_config()->work_dir, &fs) == 0;
	if (sample->have_disk) {
		sample->total_disk = (double)fs.f_blocks * fs.f_frsize;
		sample->free_disk = (double)fs.f_bavail * fs.f_frsize;
	}
	sample->taken_ms = clock_monotonic_ms();
}

static void add_system(cJSON *health)
{
	if (!system_sample.taken_ms || clock_monotonic_ms() - system_sample.taken_ms >= SYSTEM_FRESH_MS)
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
	cJSON *disk = cJSON_AddObjectToObject(health, "disk");
	cJSON_AddStringToObject(disk, "path", boxd_config()->work_dir);
	if (sample->have_disk) {
		add_number(disk, "totalBytes", sample->total_disk);
		add_number(disk, "freeBytes", sample->free_disk);
	} else {
		cJSON_AddNullToObject(disk, "totalBytes");
		cJSON_AddNullToObject(disk, "freeBytes");
	}
}

static void add_display(cJSON *health)
{
	cJSON *object = cJSON_AddObjectToObject(health, "display");
	cJSON_AddStringToObject(object, "name", boxd_config()->display);
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
	return cJSON_IsNumber(running) ? running->valueint : 0;
}

static void add_activity(cJSON *health)
{
	cJSON *activity = cJSON_AddObjectToObject(health, "activity");
	int64_t keep = running_procs(health) > 0 ? KEEP_AWAKE_BACKGROUND_MS : KEEP_AWAKE_MS;
	add_number(activity, "lastCallAt", (double)last_call_ms);
	add_number(activity, "keepAwakeUntil", (double)(last_call_ms + keep));
}

static cJSON *health_build(void)
{
	cJSON *health = cJSON_CreateObject();
	cJSON_AddBoolToObject(health, "ok", true);
	cJSON_AddStringToObject(health, "version", BOXD_VERSION);
	cJSON_AddStringToObject(health, "bootId", boot_id);
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
		answer_waiting();
	}
}

static void on_display_probe(void *arg, bool answered, bool timed_out, const unsigned char *answer,
			     size_t length)
{
	display.up = answered;
	display.silent = timed_out;
	display.width = display.height = 0;
	if (answered)
		x_parse_setup(answer, length, &display);
	probe_finished();
}

static void on_docker_probe(void *arg, bool answered, bool timed_out, const unsigned char *answer,
			    size_t length)
{
	docker_silent = timed_out;
	docker_up = answered && length >= 12 && memcmp(answer, "HTTP/1.", 7) == 0 &&
		    memcmp(answer + 8, " 200", 4) == 0;
	probe_finished();
}

static void start_probes(void)
{
	char path[64];
	int number = display_number(boxd_config()->display);
	probes_running = 2;
	if (number >= 0) {
		snprintf(path, sizeof path, "/tmp/.X11-unix/X%d", number);
		struct probe_spec x = {path, x_setup_request, sizeof x_setup_request, x_answer_length,
				       PROBE_TIMEOUT_MS};
		probe_run(&x, on_display_probe, NULL);
	} else {
		display.up = display.silent = false;
		probes_running--;
	}
	struct probe_spec docker = {"/var/run/docker.sock", docker_ping, sizeof docker_ping - 1,
				    docker_answer_length, PROBE_TIMEOUT_MS};
	probe_run(&docker, on_docker_probe, NULL);
}

/* Probe results are served while fresh. Once stale, the answer uses the
 * last result and a new probe starts behind it, so no caller waits on the X
 * server; only the very first results are waited for. */
void health_collect(health_done_fn done, void *arg)
{
	bool never = probed_at_ms < 0;
	bool stale = never || clock_monotonic_ms() - probed_at_ms >= HEALTH_PROBE_FRESH_MS;
	/* "Down" is never served from memory: a probe that ran while Xvfb was
	 * starting (just after boot, or a restart) said down, and serving that
	 * result (fresh, then once more while stale) said "display down" to
	 * later calls while :99 answered. A missing socket is refused at once, so
	 * probing again costs a connect. A server that accepted and stayed
	 * silent is served from memory like an answer: waiting on it again
	 * would make every caller wait PROBE_TIMEOUT_MS. */
	bool down = !never && ((!display.up && !display.silent) || (!docker_up && !docker_silent));
	if ((stale || down) && probes_running == 0)
		start_probes();
	if ((!never && !down) || waiting_count == MAX_WAITING) {
		done(health_build(), arg);
		return;
	}
	waiting[waiting_count++] = (struct waiting){done, arg};
}

void health_register(void (*contribute)(cJSON *health))
{
	if (contributor_count < MAX_CONTRIBUTORS)
		contributors[contributor_count++] = contribute;
}

void health_note_call(void)
{
	last_call_ms = clock_now_ms();
}

void health_invalidate(void)
{
	/* Stale, not unknown: the next collect answers at once and probes anew. */
	if (probed_at_ms >= 0)
		probed_at_ms = clock_monotonic_ms() - HEALTH_PROBE_FRESH_MS;
}

const char *health_boot_id(void)
{
	return boot_id;
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

void health_init(void)
{
	started_at_ms = clock_now_ms();
	/* A box whose boxd just started is in use: count the start as a call. */
	last_call_ms = started_at_ms;
	started_monotonic_ms = clock_monotonic_ms();
	read_boot_id();
	start_probes();
}

void health_stop(void)
{
	probe_cancel_all();
	probes_running = 0;
	answer_waiting();
	if (meminfo_fd >= 0)
		close(meminfo_fd);
	meminfo_fd = -1;
}
