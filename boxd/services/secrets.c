/* secrets.c: the secret store and the masked set (see secrets.h). */
#include "secrets.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dotenv.h"
#include "health.h"
#include "keyring.h"
#include "log.h"
#include "io.h"
#include "redact.h"
#include "text.h"
#include "xalloc.h"

#define BLOB_MAGIC "boxd-secrets-1\n"
#define MAX_BLOB (1u << 20)
#define MAX_VALUE (64u << 10)

/* Pairs "name\0value\0..." (or values "value\0...") in locked memory that
 * never goes to a core dump or swap, wiped when freed. */
struct locked {
	char *data;
	size_t size; /* mapped */
	size_t used;
	size_t count; /* strings */
};

struct service_values {
	char *service;
	struct locked values;
	struct service_values *next;
};

static struct locked secret_pairs; /* the PUT set */
static struct service_values *services;
static char *keyring_name;
static char *env_work_dir; /* WORK: the env files are under WORK/.sbx/env */

#define MAX_LISTENERS 8
struct listener {
	void (*fn)(void *ctx);
	void *ctx;
};
static struct listener listeners[MAX_LISTENERS];
static int listener_count;

static struct mask_set *current_set;

static struct locked locked_new(size_t size)
{
	size_t mapped = (size + 4095) / 4096 * 4096;
	if (mapped == 0)
		mapped = 4096;
	char *data = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (data == MAP_FAILED)
		abort();
	if (mlock(data, mapped) != 0)
		log_msg(LOG_LEVEL_WARNING,
			"cannot lock the memory holding secrets; they could be swapped out");
	madvise(data, mapped, MADV_DONTDUMP);
	return (struct locked){.data = data, .size = mapped};
}

static void locked_free(struct locked *l)
{
	if (l->data) {
		explicit_bzero(l->data, l->size);
		munlock(l->data, l->size);
		munmap(l->data, l->size);
	}
	*l = (struct locked){0};
}

static void locked_put(struct locked *l, const char *text)
{
	size_t n = strlen(text) + 1;
	memcpy(l->data + l->used, text, n);
	l->used += n;
	l->count++;
}

/* The i-th string after `from` (walks the NUL-separated list). */
static const char *locked_next(const struct locked *l, const char *at)
{
	const char *next = at + strlen(at) + 1;
	return next < l->data + l->used ? next : NULL;
}

void secrets_foreach_masked(void (*fn)(const char *value, void *ctx), void *ctx)
{
	if (secret_pairs.count)
		for (const char *name = secret_pairs.data; name;) {
			const char *value = locked_next(&secret_pairs, name);
			fn(value, ctx);
			name = locked_next(&secret_pairs, value);
		}
	for (struct service_values *s = services; s; s = s->next)
		if (s->values.count)
			for (const char *v = s->values.data; v; v = locked_next(&s->values, v))
				fn(v, ctx);
}

void secrets_on_change(void (*fn)(void *ctx), void *ctx)
{
	if (listener_count < MAX_LISTENERS)
		listeners[listener_count++] = (struct listener){fn, ctx};
}

struct value_list {
	const char **values;
	size_t count;
	size_t cap;
};

static void collect_value(const char *value, void *ctx)
{
	struct value_list *list = ctx;
	if (list->count == list->cap) {
		list->cap = list->cap ? list->cap * 2 : 16;
		list->values = xrealloc(list->values, list->cap * sizeof *list->values);
	}
	list->values[list->count++] = value;
}

static bool filter_installed; /* between secrets_init and secrets_shutdown */

static void rebuild_set(void)
{
	struct value_list list = {0};
	secrets_foreach_masked(collect_value, &list);
	struct mask_set *set = mask_set_new(list.values, NULL, list.count);
	free(list.values);

	/* With nothing to mask, text passes without a call per string. The
	 * filter goes in before a set that masks something is in place, and out
	 * only after an empty one is, so no text slips through in between. */
	bool masks = mask_set_form_count(set) > 0;
	if (filter_installed && masks)
		redact_set_filter(secrets_mask_text);
	struct mask_set *old = current_set;
	current_set = set;
	if (filter_installed && !masks)
		redact_set_filter(NULL);
	mask_set_unref(old);
	for (int i = 0; i < listener_count; i++)
		listeners[i].fn(listeners[i].ctx);
}

char *secrets_mask_text(const char *text)
{
	if (!current_set)
		return xstrdup(text);
	return mask_text(current_set, text);
}

char *secrets_mask_bytes(const char *data, size_t length, size_t *out_length)
{
	return mask_bytes(current_set, data, length, out_length);
}

static bool valid_name(const char *name)
{
	if (!((*name >= 'A' && *name <= 'Z') || (*name >= 'a' && *name <= 'z') || *name == '_'))
		return false;
	for (const char *c = name + 1; *c; c++)
		if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || *c == '_' ||
		      (*c >= '0' && *c <= '9')))
			return false;
	return strlen(name) <= 256;
}

static void persist(void)
{
	if (!keyring_name)
		return;
	char error[256];
	if (secret_pairs.count == 0) {
		keyring_clear(keyring_name);
		return;
	}
	struct locked blob = locked_new(sizeof BLOB_MAGIC + secret_pairs.used);
	memcpy(blob.data, BLOB_MAGIC, sizeof BLOB_MAGIC - 1);
	memcpy(blob.data + sizeof BLOB_MAGIC - 1, secret_pairs.data, secret_pairs.used);
	if (!keyring_save(keyring_name, blob.data, sizeof BLOB_MAGIC - 1 + secret_pairs.used, error,
			  sizeof error))
		log_msg(LOG_LEVEL_WARNING, "%s", error);
	locked_free(&blob);
}

bool secrets_replace(const char *const *names, const char *const *values, size_t count, char *error,
		     size_t error_size)
{
	size_t size = 0;
	for (size_t i = 0; i < count; i++) {
		if (!valid_name(names[i]))
			return text_fail(error, error_size,
					 "%.80s is not an environment variable name "
					 "(letters, digits and _, not starting with a digit)",
					 names[i]);
		for (size_t j = 0; j < i; j++)
			if (strcmp(names[i], names[j]) == 0)
				return text_fail(error, error_size, "the name %s is given twice",
						 names[i]);
		if (strlen(values[i]) > MAX_VALUE)
			return text_fail(error, error_size,
					 "the value of %s is longer than %u bytes", names[i],
					 MAX_VALUE);
		size += strlen(names[i]) + strlen(values[i]) + 2;
	}
	if (size + sizeof BLOB_MAGIC > MAX_BLOB) {
		snprintf(error, error_size, "the secrets take %zu bytes; at most %u fit", size,
			 MAX_BLOB);
		return false;
	}
	struct locked pairs = locked_new(size);
	for (size_t i = 0; i < count; i++) {
		locked_put(&pairs, names[i]);
		locked_put(&pairs, values[i]);
	}
	locked_free(&secret_pairs);
	secret_pairs = pairs;
	rebuild_set();
	persist();
	return true;
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

cJSON *secrets_names_json(void)
{
	size_t count = secret_pairs.count / 2, n = 0;
	const char **names = xcalloc(count + 1, sizeof *names);
	if (count)
		for (const char *name = secret_pairs.data; name && n < count; n++) {
			names[n] = name;
			name = locked_next(&secret_pairs, locked_next(&secret_pairs, name));
		}
	qsort(names, count, sizeof *names, compare_strings);
	cJSON *array = cJSON_CreateArray();
	for (size_t i = 0; i < count; i++)
		cJSON_AddItemToArray(array, cJSON_CreateString(names[i]));
	free(names);
	return array;
}

size_t secrets_count(void)
{
	return secret_pairs.count / 2;
}

void secrets_foreach(void (*fn)(const char *name, const char *value, void *ctx), void *ctx)
{
	if (!secret_pairs.count)
		return;
	for (const char *name = secret_pairs.data; name;) {
		const char *value = locked_next(&secret_pairs, name);
		fn(name, value, ctx);
		name = locked_next(&secret_pairs, value);
	}
}

void secrets_set_service_values(const char *service, const char *const *values, size_t count)
{
	struct service_values **link = &services;
	while (*link && strcmp((*link)->service, service) != 0)
		link = &(*link)->next;
	if (!*link) {
		*link = xcalloc(1, sizeof **link);
		(*link)->service = xstrdup(service);
	}
	size_t size = 0;
	for (size_t i = 0; i < count; i++)
		size += strlen(values[i]) + 1;
	struct locked fresh = locked_new(size);
	for (size_t i = 0; i < count; i++)
		locked_put(&fresh, values[i]);
	locked_free(&(*link)->values);
	(*link)->values = fresh;
	rebuild_set();
}

cJSON *secrets_apply_env(const char *service, const char *text, size_t len, char *error,
			 size_t error_size)
{
	struct dotenv env;
	if (!dotenv_parse(text, len, &env, error, error_size))
		return NULL;
	cJSON *names = cJSON_CreateArray();
	const char **values = xcalloc(2 * env.count + 1, sizeof *values);
	char **passwords = xcalloc(env.count + 1, sizeof *passwords);
	size_t n = 0, np = 0;
	for (size_t i = 0; i < env.count; i++) {
		const struct dotenv_entry *e = &env.entries[i];
		cJSON_AddItemToArray(names, cJSON_CreateString(e->name));
		if (!dotenv_is_secret(e->name, e->value))
			continue;
		values[n++] = e->value;
		size_t start, plen;
		if (dotenv_url_password(e->value, &start, &plen)) {
			passwords[np] = xstrndup(e->value + start, plen);
			values[n++] = passwords[np++];
		}
	}
	secrets_set_service_values(service, values, n);
	for (size_t i = 0; i < np; i++) {
		explicit_bzero(passwords[i], strlen(passwords[i]));
		free(passwords[i]);
	}
	free(passwords);
	free(values);
	dotenv_free(&env);
	return names;
}

static bool make_dir(const char *path, mode_t mode)
{
	return mkdir(path, mode) == 0 || errno == EEXIST;
}

char *secrets_write_env(const char *service, const char *text, size_t len, cJSON **names,
			char *error, size_t error_size)
{
	char *dir = xasprintf("%s/.sbx/env", env_work_dir);
	char *path = xasprintf("%s/%s.env", dir, service);
	char *sbx = xasprintf("%s/.sbx", env_work_dir);
	bool made = make_dir(sbx, 0755) && make_dir(dir, 0700);
	free(sbx);
	if (!made || !io_replace_file(path, text, len, 0600, IO_REPLACE_DURABLE)) {
		int saved = errno;
		text_fail(error, error_size, "cannot %s %s", made ? "write" : "create",
			  made ? path : dir);
		free(dir);
		free(path);
		errno = saved;
		return NULL;
	}
	free(dir);
	*names = secrets_apply_env(service, text, len, error, error_size);
	if (!*names)
		*names = cJSON_CreateArray();
	return path;
}

/* Settings written before a restart are masked again. */
static void load_env_files(const char *work_dir)
{
	char *dir_path = xasprintf("%s/.sbx/env", work_dir);
	DIR *dir = opendir(dir_path);
	struct dirent *entry;
	while (dir && (entry = readdir(dir))) {
		size_t name_len = strlen(entry->d_name);
		if (entry->d_name[0] == '.' || name_len < 5 ||
		    strcmp(entry->d_name + name_len - 4, ".env"))
			continue;
		int fd = openat(dirfd(dir), entry->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
		    st.st_size > (1 << 20)) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		struct locked text = locked_new((size_t)st.st_size + 1);
		ssize_t got = read(fd, text.data, (size_t)st.st_size);
		close(fd);
		char *service = xstrndup(entry->d_name, name_len - 4);
		char error[256];
		cJSON *names = got >= 0 ? secrets_apply_env(service, text.data, (size_t)got, error,
							    sizeof error)
					: NULL;
		if (!names)
			log_msg(LOG_LEVEL_WARNING, "env file of %s not read back: %s", service,
				got < 0 ? "read failed" : error);
		cJSON_Delete(names);
		free(service);
		locked_free(&text);
	}
	if (dir)
		closedir(dir);
	free(dir_path);
}

static void restore_from_keyring(void)
{
	struct locked blob = locked_new(MAX_BLOB + 1);
	long len = keyring_load(keyring_name, blob.data, MAX_BLOB);
	size_t magic = sizeof BLOB_MAGIC - 1;
	if (len > (long)magic && memcmp(blob.data, BLOB_MAGIC, magic) == 0 &&
	    blob.data[len - 1] == '\0') {
		struct locked pairs = locked_new((size_t)len - magic);
		memcpy(pairs.data, blob.data + magic, (size_t)len - magic);
		pairs.used = (size_t)len - magic;
		for (size_t i = 0; i < pairs.used; i++)
			if (pairs.data[i] == '\0')
				pairs.count++;
		if (pairs.count % 2 == 0) {
			secret_pairs = pairs;
			log_msg(LOG_LEVEL_INFO, "%zu secrets restored from the kernel keyring",
				pairs.count / 2);
		} else {
			locked_free(&pairs);
		}
	} else if (len != 0) {
		log_msg(LOG_LEVEL_WARNING, "the secrets kept in the kernel keyring are unreadable; "
					   "starting without them");
	}
	locked_free(&blob);
}

static void contribute_health(cJSON *health)
{
	cJSON *secrets = cJSON_CreateObject();
	cJSON_AddNumberToObject(secrets, "count", (double)secrets_count());
	if (cJSON_GetObjectItemCaseSensitive(health, "secrets"))
		cJSON_ReplaceItemInObjectCaseSensitive(health, "secrets", secrets);
	else
		cJSON_AddItemToObject(health, "secrets", secrets);
}

void secrets_init(const char *run_dir, const char *work_dir)
{
	free(env_work_dir);
	env_work_dir = xstrdup(work_dir);
	/* No core dump, no ptrace by other users, no /proc/PID/mem reads. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	struct rlimit no_core = {0, 0};
	setrlimit(RLIMIT_CORE, &no_core);

	keyring_name = xasprintf("boxd-secrets:%s", run_dir);
	restore_from_keyring();
	load_env_files(work_dir);
	filter_installed = true;
	rebuild_set();
	health_register(contribute_health);
}

void secrets_shutdown(void)
{
	filter_installed = false;
	redact_set_filter(NULL);
	mask_set_unref(current_set);
	current_set = NULL;
	locked_free(&secret_pairs);
	while (services) {
		struct service_values *next = services->next;
		locked_free(&services->values);
		free(services->service);
		free(services);
		services = next;
	}
	free(keyring_name);
	keyring_name = NULL;
}
