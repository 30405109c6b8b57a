/* services.c: the services table in force, and its changes, applied one
 * after another (services.h). */
#include "services.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activity.h"
#include "health.h"
#include "io.h"
#include "log.h"
#include "relay.h"
#include "services-internal.h"
#include "steps.h"
#include "text.h"
#include "xalloc.h"

enum change_kind { CHANGE_REPLACE, CHANGE_PUT, CHANGE_DELETE, CHANGE_REWIRE };

struct services_change {
	enum change_kind kind;
	struct services_table table; /* replace */
	struct service entry;        /* put */
	char *name;                  /* delete */
	services_applied_fn done;
	void *arg;
	struct services_table next; /* the table it makes */
	struct services_change *after;
};

static struct services_table current;
static char *table_path;
static bool wired, relay_running;
static char wired_why[256];
static struct services_change *queue; /* the first one runs... */
static bool running;                  /* ...once this is set */

struct services_table *services_current(void)
{
	return &current;
}

/* ---- parsing changes ---- */

struct services_change *services_change_replace(const cJSON *body, char *error, size_t size)
{
	struct services_change *change = xcalloc(1, sizeof *change);
	change->kind = CHANGE_REPLACE;
	if (!services_parse_table(body, &change->table, error, size)) {
		free(change);
		return NULL;
	}
	return change;
}

struct services_change *services_change_put(const char *name, const cJSON *body, char *error,
					    size_t size)
{
	if (!cJSON_IsObject(body)) {
		text_fail(error, size, "the body must be a service entry (an object)");
		return NULL;
	}
	/* The name is the path's; a body that names another is a mistake. */
	const cJSON *named = cJSON_GetObjectItemCaseSensitive(body, "name");
	if (named && !(cJSON_IsString(named) && !strcmp(named->valuestring, name))) {
		text_fail(error, size, "name: the body names another service than the path (%s)",
			  name);
		return NULL;
	}
	cJSON *entry = cJSON_Duplicate(body, true);
	if (!named)
		cJSON_AddStringToObject(entry, "name", name);
	struct services_change *change = xcalloc(1, sizeof *change);
	change->kind = CHANGE_PUT;
	bool ok = services_parse_entry(entry, "service", &change->entry, error, size);
	cJSON_Delete(entry);
	if (!ok) {
		free(change);
		return NULL;
	}
	return change;
}

struct services_change *services_change_delete(const char *name, bool *not_found)
{
	*not_found = !services_find(&current, name);
	if (*not_found)
		return NULL;
	struct services_change *change = xcalloc(1, sizeof *change);
	change->kind = CHANGE_DELETE;
	change->name = xstrdup(name);
	return change;
}

static void free_change(struct services_change *change)
{
	services_free_table(&change->table);
	services_free_entry(&change->entry);
	services_free_table(&change->next);
	free(change->name);
	free(change);
}

/* ---- applying ---- */

/* What is known of the listeners carries over from the table in force to
 * `next`: the rules are right from the first connection, and a listener
 * seen while `next` was being wired is not reported twice. */
static bool carry_listeners(struct services_table *next)
{
	bool moved = false; /* to or from ::1 only: the rules must follow */
	for (size_t i = 0; i < next->count; i++) {
		struct service *entry = &next->entries[i];
		const struct service *old = services_find(&current, entry->name);
		if (old && old->mode == entry->mode) {
			moved |= (entry->reach == LISTEN_V6_LOOPBACK) !=
				 (old->reach == LISTEN_V6_LOOPBACK);
			entry->reach = old->reach;
			entry->accepting = old->accepting;
		}
	}
	return moved;
}

/* The table `change` makes of the current one; false with a sentence when
 * it cannot be (a deleted entry gone meanwhile, a port taken). */
static bool make_next(struct services_change *change, char *error, size_t size)
{
	struct services_table *next = &change->next;
	if (change->kind == CHANGE_REPLACE) {
		services_copy_table(next, &change->table);
	} else if (change->kind == CHANGE_REWIRE) {
		services_copy_table(next, &current);
	} else {
		services_copy_table(next, &current);
		struct service *old = services_find(
			next, change->kind == CHANGE_DELETE ? change->name : change->entry.name);
		if (change->kind == CHANGE_DELETE && !old)
			return text_fail(error, size, "no service %s", change->name);
		if (change->kind == CHANGE_PUT && old) {
			services_free_entry(old);
			services_copy_entry(old, &change->entry);
		} else if (change->kind == CHANGE_PUT) {
			next->entries =
				xrealloc(next->entries, (next->count + 1) * sizeof *next->entries);
			services_copy_entry(&next->entries[next->count++], &change->entry);
		} else if (old) {
			services_free_entry(old);
			size_t at = (size_t)(old - next->entries);
			memmove(old, old + 1, (next->count - at - 1) * sizeof *old);
			next->count--;
		}
	}
	if (!services_check_table(next, error, size))
		return false;
	services_assign_ips(next, &current);
	carry_listeners(next);
	return true;
}

static void run_next(void);

static void summarize(const struct services_change *change, char *text, size_t size)
{
	switch (change->kind) {
	case CHANGE_REPLACE:
		snprintf(text, size, "services table set: %zu", change->next.count);
		break;
	case CHANGE_PUT:
		snprintf(text, size, "service %s: %s :%u", change->entry.name,
			 change->entry.mode == SERVICE_BOX ? "box" : "external",
			 change->entry.port);
		break;
	case CHANGE_DELETE: snprintf(text, size, "service %s removed", change->name); break;
	case CHANGE_REWIRE: snprintf(text, size, "services rewired"); break;
	}
}

static void on_restored(bool ok, const char *error, void *arg)
{
	(void)arg;
	if (!ok)
		log_msg(LOG_LEVEL_ERROR, "could not put the services back as they were: %s", error);
}

static void on_wired(bool ok, const char *error, void *arg)
{
	struct services_change *change = arg;
	queue = change->after;
	running = false;
	if (ok) {
		bool moved = carry_listeners(&change->next);
		services_free_table(&current);
		current = change->next;
		memset(&change->next, 0, sizeof change->next);
		if (!services_save(table_path, &current))
			log_msg(LOG_LEVEL_ERROR, "cannot save the services table in %s",
				table_path);
		services_ready_update();
		if (moved)
			services_rewire();
		if (change->kind != CHANGE_REWIRE) {
			char summary[200];
			summarize(change, summary, sizeof summary);
			steps_add("services", "%s", summary);
		}
	} else if (change->kind != CHANGE_REWIRE) {
		/* Names and the relay went the new way before nft refused. */
		services_wire(&current, on_restored, NULL);
	}
	if (change->done)
		change->done(change->arg, ok ? SERVICES_APPLIED : SERVICES_FAILED,
			     ok ? services_table_json() : NULL, error);
	free_change(change);
	run_next();
}

static void run_next(void)
{
	while (queue && !running) {
		struct services_change *change = queue;
		char error[512];
		if (make_next(change, error, sizeof error)) {
			running = true;
			services_wire(&change->next, on_wired, change);
			return;
		}
		queue = change->after;
		if (change->done)
			change->done(change->arg, SERVICES_REFUSED, NULL, error);
		free_change(change);
	}
}

static void enqueue(struct services_change *change)
{
	struct services_change **tail = &queue;
	while (*tail)
		tail = &(*tail)->after;
	*tail = change;
	if (!running)
		run_next();
}

void services_apply(struct services_change *change, services_applied_fn done, void *arg)
{
	change->done = done;
	change->arg = arg;
	enqueue(change);
}

void services_rewire(void)
{
	/* One pending rewire is enough: it wires the table as it is then. */
	for (struct services_change *c = queue ? queue->after : NULL; c; c = c->after)
		if (c->kind == CHANGE_REWIRE)
			return;
	struct services_change *change = xcalloc(1, sizeof *change);
	change->kind = CHANGE_REWIRE;
	enqueue(change);
}

/* ---- answers ---- */

cJSON *services_table_json(void)
{
	cJSON *answer = cJSON_CreateObject();
	cJSON *list = cJSON_AddArrayToObject(answer, "services");
	for (size_t i = 0; i < current.count; i++)
		cJSON_AddItemToArray(list, services_entry_json(&current.entries[i]));
	cJSON_AddBoolToObject(answer, "wired", wired);
	if (!wired)
		cJSON_AddStringToObject(answer, "notWired", wired_why);
	return answer;
}

cJSON *services_entry(const char *name)
{
	const struct service *entry = services_find(&current, name);
	return entry ? services_entry_json(entry) : NULL;
}

/* ---- health: the way in counts as activity ---- */

/* A connection through the way in is use of the box as a call is: the box
 * is busy while one is open (activity.h keeps it awake as long after). */
static bool ingress_in_use(int64_t now_ms, int64_t *last_ms)
{
	(void)now_ms;
	if (!relay_running)
		return false;
	*last_ms = relay_last_ingress_ms();
	return relay_ingress_open() > 0;
}

static void contribute(cJSON *activity)
{
	if (!relay_running)
		return;
	cJSON_AddNumberToObject(activity, "lastIngressAt", (double)relay_last_ingress_ms());
	cJSON_AddNumberToObject(activity, "ingressOpen", relay_ingress_open());
}

/* ---- start and stop ---- */

/* The relay listens on the port the last boxd's did (RUN_DIR/services.relay)
 * when it can: the kernel's rules, which outlived that boxd, still send
 * there, so nothing the relay forwards is refused while boxd wires again. */
static uint16_t last_relay_port(const char *path)
{
	FILE *file = fopen(path, "re");
	unsigned port = 0;
	if (file) {
		if (fscanf(file, "%u", &port) != 1 || port > 65535)
			port = 0;
		fclose(file);
	}
	return (uint16_t)port;
}

static bool start_relay(const struct boxd_config *config, uint16_t *port)
{
	char *path = xasprintf("%s/services.relay", config->run_dir);
	*port = last_relay_port(path);
	char error[256];
	if (!relay_start(config->allowed_cids, config->allowed_cid_count, port, error,
			 sizeof error)) {
		log_msg(LOG_LEVEL_ERROR, "services: %s; what the relay forwards will not work",
			error);
		free(path);
		return false;
	}
	char text[16];
	snprintf(text, sizeof text, "%u\n", *port);
	if (!io_replace_file(path, text, strlen(text), 0600, 0))
		log_msg(LOG_LEVEL_WARNING, "cannot write %s: %s", path, strerror(errno));
	free(path);
	return true;
}

void services_init(struct event_base *base, const struct boxd_config *config)
{
	table_path = xasprintf("%s/services.json", config->run_dir);
	wired = services_wire_probe(wired_why, sizeof wired_why);
	if (!wired)
		log_msg(LOG_LEVEL_INFO, "services: %s", wired_why);
	uint16_t relay_port = 0;
	relay_running = start_relay(config, &relay_port);
	unsigned ingress = config->ingress_base > 0 ? (unsigned)config->ingress_base : 0;
	services_wire_init(base, config->run_dir, config->hosts_file, wired, relay_port, ingress,
			   relay_running);
	services_ready_init(base);
	health_register_activity(contribute);
	activity_register_source(ACTIVITY_INGRESS, ingress_in_use);
	services_load(table_path, &current);
	/* Wired again at once (after a reboot the kernel has no rules), once
	 * the listeners are known: a ::1-only one goes through the relay. */
	services_ready_update();
	services_rewire();
	if (current.count)
		log_msg(LOG_LEVEL_INFO, "services: %zu kept from before", current.count);
}

void services_stop(void)
{
	services_ready_stop();
	if (relay_running)
		relay_stop();
	relay_running = false;
}
