#include "init.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "dotenv.h"
#include "entropy.h"
#include "health.h"
#include "hosts-block.h"
#include "io.h"
#include "log.h"
#include "report.h"
#include "secrets.h"
#include "steps.h"
#include "text.h"
#include "xalloc.h"

#define HOSTS_BEGIN "# boxd: begin (names the control plane wired; rewritten by boxd)"
#define HOSTS_END "# boxd: end"
#define INIT_MAX_FILE (1u << 20)

static char *state_path, *hosts_path;
static cJSON *state; /* {"unixMs", "env", "user", "workDir"}: the last init applied */
static char instance_id[33];

#define MAX_APPLIED_LISTENERS 4
struct applied_listener {
	void (*fn)(void *ctx);
	void *ctx;
};
static struct applied_listener applied_listeners[MAX_APPLIED_LISTENERS];
static int applied_listener_count;

void init_on_applied(void (*fn)(void *ctx), void *ctx)
{
	if (applied_listener_count < MAX_APPLIED_LISTENERS)
		applied_listeners[applied_listener_count++] = (struct applied_listener){fn, ctx};
}

static void new_instance_id(void)
{
	unsigned char bytes[16];
	if (getrandom(bytes, sizeof bytes, 0) != sizeof bytes)
		for (size_t i = 0; i < sizeof bytes; i++)
			bytes[i] = (unsigned char)(clock_monotonic_us() >> (i * 3));
	for (size_t i = 0; i < sizeof bytes; i++)
		snprintf(instance_id + 2 * i, 3, "%02x", bytes[i]);
	health_set_instance_id(instance_id);
}

const char *init_instance_id(void)
{
	return instance_id;
}

static const char *state_string(const char *name)
{
	const cJSON *item = state ? cJSON_GetObjectItemCaseSensitive(state, name) : NULL;
	const char *text = cJSON_GetStringValue(item);
	return text && *text ? text : NULL;
}

const char *init_user(void)
{
	return state_string("user");
}

const char *init_work_dir(void)
{
	return state_string("workDir");
}

void init_env_foreach(void (*each)(const char *entry, void *arg), void *arg)
{
	const cJSON *env = state ? cJSON_GetObjectItemCaseSensitive(state, "env") : NULL;
	for (const cJSON *item = env ? env->child : NULL; item; item = item->next) {
		char *entry = xasprintf("%s=%s", item->string, item->valuestring);
		each(entry, arg);
		free(entry);
	}
}

/* Secret-looking values of the init environment are masked, as those of a
 * service's env file are. */
static void mask_env_values(void)
{
	const cJSON *env = state ? cJSON_GetObjectItemCaseSensitive(state, "env") : NULL;
	size_t count = 0;
	const char **values = xcalloc((size_t)cJSON_GetArraySize(env) + 1, sizeof *values);
	for (const cJSON *item = env ? env->child : NULL; item; item = item->next)
		if (dotenv_is_secret(item->string, item->valuestring))
			values[count++] = item->valuestring;
	secrets_set_service_values("init", values, count);
	free(values);
}

bool init_clock_is_off(int64_t now_ms, int64_t unix_ms)
{
	return now_ms < unix_ms - INIT_CLOCK_BEHIND_MS || now_ms > unix_ms + INIT_CLOCK_AHEAD_MS;
}

/* ---- validation: nothing is applied unless every field is right ---- */

static bool valid_host_name(const char *name)
{
	size_t length = strlen(name);
	return length && length <= 253 && name[0] != '-' && name[0] != '.' &&
	       strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-") ==
		       length;
}

static bool valid_address(const char *text)
{
	unsigned char address[16];
	return inet_pton(AF_INET, text, address) == 1 || inet_pton(AF_INET6, text, address) == 1;
}

static bool check_hosts(const cJSON *hosts, char *error, size_t size)
{
	if (!hosts)
		return true;
	if (!cJSON_IsObject(hosts))
		return text_fail(error, size, "hosts must be an object of \"name\": \"address\"");
	for (const cJSON *item = hosts->child; item; item = item->next) {
		if (!valid_host_name(item->string))
			return text_fail(
				error, size,
				"hosts: %.64s is not a host name (letters, digits, . and -)",
				item->string);
		if (!cJSON_IsString(item) || !valid_address(item->valuestring))
			return text_fail(error, size,
					 "hosts: the address of %s must be an IPv4 or IPv6 address",
					 item->string);
	}
	return true;
}

static bool check_env(const cJSON *env, char *error, size_t size)
{
	if (!env)
		return true;
	if (!cJSON_IsObject(env))
		return text_fail(error, size, "env must be an object of NAME: \"value\" strings");
	for (const cJSON *item = env->child; item; item = item->next) {
		if (!text_is_env_name(item->string) || !cJSON_IsString(item))
			return text_fail(error, size,
					 "env entry %.64s must have a name of letters, digits "
					 "and _ and a string value",
					 item->string);
	}
	return true;
}

static bool check_request(const cJSON *request, char *error, size_t size)
{
	const cJSON *unix_ms = cJSON_GetObjectItemCaseSensitive(request, "unixMs");
	if (unix_ms && (!cJSON_IsNumber(unix_ms) || unix_ms->valuedouble < 0 ||
			unix_ms->valuedouble > 4102444800000.0))
		return text_fail(error, size, "unixMs must be milliseconds since the epoch");
	const char *strings[] = {"user", "workDir"};
	for (size_t i = 0; i < 2; i++) {
		const cJSON *item = cJSON_GetObjectItemCaseSensitive(request, strings[i]);
		if (item && !cJSON_IsString(item))
			return text_fail(error, size, "%s must be a string", strings[i]);
	}
	const cJSON *work_dir = cJSON_GetObjectItemCaseSensitive(request, "workDir");
	struct stat info;
	if (work_dir && (work_dir->valuestring[0] != '/' ||
			 stat(work_dir->valuestring, &info) != 0 || !S_ISDIR(info.st_mode)))
		return text_fail(error, size,
				 "workDir %s must be an existing directory, given absolute",
				 work_dir->valuestring);
	const cJSON *entropy = cJSON_GetObjectItemCaseSensitive(request, "entropy");
	if (entropy && !cJSON_IsString(entropy))
		return text_fail(error, size, "entropy must be a base64 string");
	if (entropy && !entropy_check(entropy->valuestring, error, size))
		return false;
	return check_hosts(cJSON_GetObjectItemCaseSensitive(request, "hosts"), error, size) &&
	       check_env(cJSON_GetObjectItemCaseSensitive(request, "env"), error, size);
}

/* The host's entropy, before anything draws a random number (the new
 * instanceId, exec's new spares): given even by a late duplicate, since
 * more of it never hurts. */
static bool give_entropy(const cJSON *request, struct init_outcome *outcome, char *error,
			 size_t size)
{
	const cJSON *entropy = cJSON_GetObjectItemCaseSensitive(request, "entropy");
	if (!entropy)
		return true;
	outcome->entropy = entropy_give(entropy->valuestring, error, size);
	if (!outcome->entropy)
		outcome->system_error = errno ? errno : EIO;
	return outcome->entropy != NULL;
}

/* The whole of a small file ("" when absent), NUL-terminated. */
static char *read_file(const char *path, size_t *length)
{
	*length = 0;
	FILE *file = fopen(path, "re");
	if (!file)
		return xstrdup("");
	char *text = xmalloc(INIT_MAX_FILE + 1);
	*length = fread(text, 1, INIT_MAX_FILE, file);
	fclose(file);
	text[*length] = '\0';
	return text;
}

/* ---- the hosts file: boxd's block replaced, every other line kept ---- */

/* False with errno set (and the sentence in `error`) when it cannot. */
static bool write_hosts(const cJSON *hosts, char *error, size_t size)
{
	char *lines = NULL;
	size_t length = 0;
	FILE *out = open_memstream(&lines, &length);
	for (const cJSON *item = hosts->child; item; item = item->next)
		fprintf(out, "%s\t%s\n", item->valuestring, item->string);
	fclose(out);
	bool ok = hosts_block_write(hosts_path, HOSTS_BEGIN, HOSTS_END, lines, error, size);
	int saved = errno;
	free(lines);
	errno = saved;
	return ok;
}

/* ---- the clock ---- */

/* False with errno set (and the sentence in `error`) when it cannot. */
static bool set_clock(int64_t unix_ms, char *error, size_t size)
{
	struct timespec when = {.tv_sec = unix_ms / 1000, .tv_nsec = (unix_ms % 1000) * 1000000};
	if (clock_settime(CLOCK_REALTIME, &when) != 0) {
		int saved = errno;
		text_fail(error, size, "cannot set the clock: %s", strerror(saved));
		errno = saved;
		return false;
	}
	return true;
}

/* ---- applying and keeping ---- */

static void save_state(void)
{
	char *text = cJSON_PrintUnformatted(state);
	if (!io_replace_file(state_path, text, strlen(text), 0600, 0))
		log_msg(LOG_LEVEL_WARNING, "cannot keep the init settings in %s: %s", state_path,
			strerror(errno));
	cJSON_free(text);
}

static void merge_field(const cJSON *request, const char *name)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(request, name);
	if (!item)
		return;
	if (cJSON_GetObjectItemCaseSensitive(state, name))
		cJSON_ReplaceItemInObjectCaseSensitive(state, name, cJSON_Duplicate(item, true));
	else
		cJSON_AddItemToObject(state, name, cJSON_Duplicate(item, true));
}

bool init_apply(const cJSON *request, struct init_outcome *outcome, char *error, size_t size)
{
	*outcome = (struct init_outcome){0};
	bool *applied = &outcome->applied, *clock_set = &outcome->clock_set;
	int *system_error = &outcome->system_error;
	if (!check_request(request, error, size) || !give_entropy(request, outcome, error, size))
		return false;
	const cJSON *unix_ms = cJSON_GetObjectItemCaseSensitive(request, "unixMs");
	const cJSON *last = cJSON_GetObjectItemCaseSensitive(state, "unixMs");
	/* Older than the last one applied, by no more than a call can be late:
	 * a late duplicate. Older by more, the last one was not the host's
	 * time (a clock set far ahead): the host's word now wins. */
	if (unix_ms && cJSON_IsNumber(last) && unix_ms->valuedouble < last->valuedouble &&
	    last->valuedouble - unix_ms->valuedouble <= INIT_LATE_MS)
		return true;
	const cJSON *hosts = cJSON_GetObjectItemCaseSensitive(request, "hosts");
	if (hosts && !write_hosts(hosts, error, size)) {
		*system_error = errno;
		return false;
	}
	if (unix_ms && init_clock_is_off(clock_now_ms(), (int64_t)unix_ms->valuedouble)) {
		if (!set_clock((int64_t)unix_ms->valuedouble, error, size)) {
			*system_error = errno;
			return false;
		}
		*clock_set = true;
	}
	const char *fields[] = {"unixMs", "env", "user", "workDir"};
	for (size_t i = 0; i < 4; i++)
		merge_field(request, fields[i]);
	save_state();
	mask_env_values();
	new_instance_id();
	*applied = true;
	/* Whatever the box slept through, the display, Docker and the report
	 * peer are asked anew; then whoever keeps what a snapshot must not
	 * hand out twice (exec's spare shims, holding ids drawn before it). */
	health_invalidate();
	report_thawed();
	for (int i = 0; i < applied_listener_count; i++)
		applied_listeners[i].fn(applied_listeners[i].ctx);
	steps_add("init", "init applied%s%s, %d hosts, %d env", *clock_set ? ", clock set" : "",
		  hosts ? "" : " (hosts kept)", hosts ? cJSON_GetArraySize(hosts) : 0,
		  cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(request, "env")));
	return true;
}

void init_start(const char *run_dir, const char *hosts)
{
	new_instance_id();
	state_path = xasprintf("%s/init.json", run_dir);
	hosts_path = xstrdup(hosts);
	size_t length;
	char *text = read_file(state_path, &length);
	state = length ? cJSON_ParseWithLength(text, length) : NULL;
	free(text);
	if (!cJSON_IsObject(state)) {
		cJSON_Delete(state);
		state = cJSON_CreateObject();
	}
	mask_env_values();
}
