/* credentials-docker.c: the credHelpers entries that send Docker to
 * docker-credential-boxd for each registry set (docs/credentials.md).
 *
 * Docker reads credHelpers from the config.json of the user running the
 * docker command: $DOCKER_CONFIG/config.json, else ~/.docker/config.json.
 * boxd writes into the config that docker run with boxd's own environment
 * reads ($DOCKER_CONFIG when boxd has it, else root's) and into the default
 * command user's, merging with what is there: every other key and every
 * other credHelpers entry is kept, entries naming "boxd" for registries no
 * longer set are removed. No password is ever written. A config that does
 * not parse is left as it is (logged): it is the user's. */
#include "credentials.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fields.h"
#include "io.h"
#include "log.h"
#include "xalloc.h"

#define HELPER_NAME "boxd"

static void add_entry(const char *registry, void *ctx)
{
	cJSON *helpers = ctx;
	cJSON_DeleteItemFromObjectCaseSensitive(helpers, registry);
	cJSON_AddStringToObject(helpers, registry, HELPER_NAME);
}

/* Drops our entries, then adds one per registry set. */
static void merge(cJSON *config)
{
	cJSON *helpers = cJSON_GetObjectItemCaseSensitive(config, "credHelpers");
	if (!cJSON_IsObject(helpers)) {
		cJSON_DeleteItemFromObjectCaseSensitive(config, "credHelpers");
		helpers = cJSON_AddObjectToObject(config, "credHelpers");
	}
	cJSON *item = helpers->child;
	while (item) {
		cJSON *next = item->next;
		if (cJSON_IsString(item) && strcmp(item->valuestring, HELPER_NAME) == 0)
			cJSON_Delete(cJSON_DetachItemViaPointer(helpers, item));
		item = next;
	}
	credentials_foreach_registry(add_entry, helpers);
}

/* `dir`/config.json merged and written back whole (0600, the dir's owner). */
static size_t registry_count;

static void count_registry(const char *registry, void *ctx)
{
	(void)registry;
	(void)ctx;
	registry_count++;
}

static void sync_config(const char *dir)
{
	struct stat dir_info;
	char *probe = xasprintf("%s/config.json", dir);
	bool exists = access(probe, F_OK) == 0;
	free(probe);
	if (!exists && registry_count == 0)
		return; /* nothing to add, nothing to take away */
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		log_msg(LOG_LEVEL_WARNING, "cannot make %s: %s", dir, strerror(errno));
		return;
	}
	if (stat(dir, &dir_info) != 0 || !S_ISDIR(dir_info.st_mode))
		return;
	char *path = xasprintf("%s/config.json", dir);
	size_t length = 0;
	char *text = fields_read_file(path, 1 << 20, &length);
	cJSON *config = text ? cJSON_ParseWithLength(text, length) : cJSON_CreateObject();
	if (!cJSON_IsObject(config)) {
		free(text);
		log_msg(LOG_LEVEL_WARNING,
			"%s is not a JSON object; its credHelpers are left as they are", path);
		cJSON_Delete(config);
		free(path);
		return;
	}
	cJSON *before = cJSON_Duplicate(config, true);
	merge(config);
	bool same = text && cJSON_Compare(before, config, true);
	cJSON_Delete(before);
	free(text);
	if (same) {
		cJSON_Delete(config);
		free(path);
		return;
	}
	char *out = cJSON_Print(config);
	cJSON_Delete(config);
	if (!io_replace_file(path, out, strlen(out), 0600, 0))
		log_msg(LOG_LEVEL_WARNING, "cannot write %s: %s", path, strerror(errno));
	else if (chown(path, dir_info.st_uid, dir_info.st_gid) != 0)
		log_msg(LOG_LEVEL_WARNING, "cannot give %s to uid %u: %s", path,
			(unsigned)dir_info.st_uid, strerror(errno));
	free(out);
	free(path);
}

static void sync_home(const struct passwd *pw)
{
	if (!pw || !pw->pw_dir || pw->pw_dir[0] != '/')
		return;
	char *dir = xasprintf("%s/.docker", pw->pw_dir);
	bool made = access(dir, F_OK) != 0;
	sync_config(dir);
	if (made && access(dir, F_OK) == 0 && chown(dir, pw->pw_uid, pw->pw_gid) != 0)
		log_msg(LOG_LEVEL_WARNING, "cannot give %s to %s: %s", dir, pw->pw_name,
			strerror(errno));
	free(dir);
}

void credentials_docker_sync(const char *docker_user)
{
	registry_count = 0;
	credentials_foreach_registry(count_registry, NULL);
	const char *own = getenv("DOCKER_CONFIG");
	if (own && own[0]) {
		/* A boxd run with DOCKER_CONFIG (tests, a custom setup) keeps to it. */
		sync_config(own);
		return;
	}
	sync_home(getpwuid(0));
	struct passwd *user = docker_user ? getpwnam(docker_user) : NULL;
	if (user && user->pw_uid != 0)
		sync_home(user);
}
