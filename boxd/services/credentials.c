/* credentials.c: the git hosts, Docker registries and AWS role the box's
 * tools pick up (credentials.h, docs/credentials.md): validation, the table
 * and its file, the answers the credential helpers print, the AWS token
 * file and environment. */
#include "credentials.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fields.h"
#include "io.h"
#include "log.h"
#include "secrets.h"
#include "text.h"
#include "xalloc.h"

#define MAX_ENTRIES 256
#define MAX_HOST 253
#define MAX_USERNAME 256
#define MAX_TOKEN 20000 /* AssumeRoleWithWebIdentity's own limit */
#define MAX_ARN 2048
/* The secrets module keeps the token's masked value under this key, which
 * no service file name can take ('/'). */
#define AWS_MASK_KEY "/credentials/aws"

struct entry {
	char *host; /* a git host or a registry, as given (compared without case) */
	char *username;
	char *secret; /* a secret's NAME */
};

struct table {
	struct entry items[MAX_ENTRIES];
	size_t count;
};

static struct {
	char *run_dir;
	char *docker_user;
	char *table_path;
	char *token_path;
	struct table git, registries;
	char *role_arn, *region; /* NULL: no AWS role */
} creds;

/* ---- validation ---- */

static bool host_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '.';
}

/* host, host:port, [v6] or [v6]:port; letters, digits, '-', '.'. */
static bool valid_host(const char *host)
{
	size_t len = strlen(host);
	if (len == 0 || len > MAX_HOST + 6)
		return false;
	const char *end = host;
	if (*host == '[') {
		const char *close = strchr(host, ']');
		if (!close || close == host + 1)
			return false;
		for (const char *c = host + 1; c < close; c++)
			if (!isxdigit((unsigned char)*c) && *c != ':' && *c != '.')
				return false;
		end = close + 1;
	} else {
		while (host_char(*end))
			end++;
		if (end == host || *host == '.' || *host == '-')
			return false;
	}
	if (*end == '\0')
		return true;
	if (*end != ':' || !end[1] || strlen(end + 1) > 5)
		return false;
	for (const char *c = end + 1; *c; c++)
		if (!isdigit((unsigned char)*c))
			return false;
	long port = strtol(end + 1, NULL, 10);
	return port >= 1 && port <= 65535;
}

/* Lines of git's credential protocol carry it: no line end, no control
 * byte. */
static bool valid_username(const char *username)
{
	size_t len = strlen(username);
	if (len == 0 || len > MAX_USERNAME)
		return false;
	for (const char *c = username; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

struct lookup {
	const char *name;
	char *value; /* a copy, wiped by its taker */
};

static void find_secret(const char *name, const char *value, void *ctx)
{
	struct lookup *lookup = ctx;
	if (!lookup->value && strcmp(name, lookup->name) == 0)
		lookup->value = xstrdup(value);
}

/* The secret's value (caller wipes and frees), or NULL. */
static char *secret_value(const char *name)
{
	struct lookup lookup = {.name = name};
	secrets_foreach(find_secret, &lookup);
	return lookup.value;
}

static void wipe_free(char *value)
{
	if (value) {
		explicit_bzero(value, strlen(value));
		free(value);
	}
}

static bool secret_exists(const char *name)
{
	char *value = secret_value(name);
	wipe_free(value);
	return value != NULL;
}

static bool check_entry(const char *what, const char *host, const char *username,
			const char *secret, char *error, size_t size)
{
	if (!valid_host(host))
		return text_fail(error, size,
				 "the %s %.300s must be a host name or address, with an optional "
				 ":port (no scheme, path or spaces)",
				 what, host);
	if (!valid_username(username))
		return text_fail(error, size,
				 "the username must be 1 to %d characters without control "
				 "characters or line ends",
				 MAX_USERNAME);
	if (!text_is_env_name(secret) || strlen(secret) > 256)
		return text_fail(error, size,
				 "`secret` is the name of a secret (PUT /v1/secrets), such as "
				 "GITHUB_TOKEN; %.100s is not a secret's name",
				 secret);
	if (!secret_exists(secret))
		return text_fail(error, size,
				 "no secret is named %.256s: set it first with PUT /v1/secrets "
				 "(`secret` names a secret, it is never the value)",
				 secret);
	return true;
}

/* ---- the table and its file ---- */

static struct entry *find(struct table *table, const char *host)
{
	for (size_t i = 0; i < table->count; i++)
		if (strcasecmp(table->items[i].host, host) == 0)
			return &table->items[i];
	return NULL;
}

static void entry_free(struct entry *entry)
{
	free(entry->host);
	free(entry->username);
	free(entry->secret);
}

static bool table_put(struct table *table, const char *host, const char *username,
		      const char *secret, char *error, size_t size)
{
	struct entry *entry = find(table, host);
	if (!entry) {
		if (table->count == MAX_ENTRIES)
			return text_fail(error, size, "at most %d entries of a kind are kept",
					 MAX_ENTRIES);
		entry = &table->items[table->count++];
	} else {
		entry_free(entry);
	}
	*entry = (struct entry){xstrdup(host), xstrdup(username), xstrdup(secret)};
	return true;
}

static bool table_remove(struct table *table, const char *host)
{
	struct entry *entry = find(table, host);
	if (!entry)
		return false;
	entry_free(entry);
	*entry = table->items[--table->count];
	return true;
}

static cJSON *table_json(const struct table *table, const char *key)
{
	cJSON *list = cJSON_CreateArray();
	for (size_t i = 0; i < table->count; i++) {
		const struct entry *e = &table->items[i];
		cJSON *item = cJSON_CreateObject();
		cJSON_AddStringToObject(item, key, e->host);
		cJSON_AddStringToObject(item, "username", e->username);
		cJSON_AddStringToObject(item, "secret", e->secret);
		cJSON_AddBoolToObject(item, "secretSet", secret_exists(e->secret));
		cJSON_AddItemToArray(list, item);
	}
	return list;
}

cJSON *credentials_json(void)
{
	cJSON *answer = cJSON_CreateObject();
	cJSON_AddItemToObject(answer, "git", table_json(&creds.git, "host"));
	cJSON_AddItemToObject(answer, "registries", table_json(&creds.registries, "registry"));
	if (creds.role_arn) {
		cJSON *aws = cJSON_AddObjectToObject(answer, "aws");
		cJSON_AddStringToObject(aws, "roleArn", creds.role_arn);
		cJSON_AddStringToObject(aws, "region", creds.region);
		cJSON_AddStringToObject(aws, "tokenFile", creds.token_path);
	} else {
		cJSON_AddNullToObject(answer, "aws");
	}
	return answer;
}

/* The table without the token's file name (it is fixed): what a restart
 * reads back. Values are never in it. */
static void save(void)
{
	cJSON *saved = credentials_json();
	cJSON *aws = cJSON_GetObjectItem(saved, "aws");
	if (cJSON_IsObject(aws))
		cJSON_DeleteItemFromObject(aws, "tokenFile");
	char *text = cJSON_PrintUnformatted(saved);
	cJSON_Delete(saved);
	if (!io_replace_file(creds.table_path, text, strlen(text), 0600, 0))
		log_msg(LOG_LEVEL_WARNING,
			"cannot write %s: %s (credentials set now are lost at a restart of boxd)",
			creds.table_path, strerror(errno));
	free(text);
}

static void load_table(struct table *table, const cJSON *list, const char *key)
{
	const cJSON *item;
	char error[64];
	cJSON_ArrayForEach(item, list)
	{
		const char *host = cJSON_GetStringValue(cJSON_GetObjectItem(item, key));
		const char *username = cJSON_GetStringValue(cJSON_GetObjectItem(item, "username"));
		const char *secret = cJSON_GetStringValue(cJSON_GetObjectItem(item, "secret"));
		if (host && username && secret && valid_host(host) && valid_username(username))
			table_put(table, host, username, secret, error, sizeof error);
	}
}

static void mask_token(const char *token)
{
	secrets_set_service_values(AWS_MASK_KEY, &token, token ? 1 : 0);
}

static void load(void)
{
	size_t length;
	char *text = fields_read_file(creds.table_path, 1 << 20, &length);
	if (!text)
		return;
	cJSON *saved = cJSON_ParseWithLength(text, length);
	free(text);
	if (!saved) {
		log_msg(LOG_LEVEL_WARNING, "%s does not parse; no credentials restored",
			creds.table_path);
		return;
	}
	load_table(&creds.git, cJSON_GetObjectItem(saved, "git"), "host");
	load_table(&creds.registries, cJSON_GetObjectItem(saved, "registries"), "registry");
	const cJSON *aws = cJSON_GetObjectItem(saved, "aws");
	const char *arn = cJSON_GetStringValue(cJSON_GetObjectItem(aws, "roleArn"));
	const char *region = cJSON_GetStringValue(cJSON_GetObjectItem(aws, "region"));
	char *token = fields_read_file(creds.token_path, MAX_TOKEN + 1, &length);
	if (arn && region && token) {
		creds.role_arn = xstrdup(arn);
		creds.region = xstrdup(region);
		mask_token(token);
	}
	wipe_free(token);
	cJSON_Delete(saved);
	log_msg(LOG_LEVEL_INFO, "credentials restored: %zu git hosts, %zu registries, AWS role %s",
		creds.git.count, creds.registries.count, creds.role_arn ? "set" : "not set");
}

void credentials_init(const char *run_dir, const char *docker_user)
{
	creds.run_dir = xstrdup(run_dir);
	creds.docker_user = docker_user ? xstrdup(docker_user) : NULL;
	creds.table_path = xasprintf("%s/credentials.json", run_dir);
	creds.token_path = xasprintf("%s/aws-web-identity-token", run_dir);
	load();
	credentials_docker_sync(creds.docker_user);
}

static void table_clear(struct table *table)
{
	for (size_t i = 0; i < table->count; i++)
		entry_free(&table->items[i]);
	table->count = 0;
}

void credentials_shutdown(void)
{
	table_clear(&creds.git);
	table_clear(&creds.registries);
	free(creds.role_arn);
	free(creds.region);
	free(creds.run_dir);
	free(creds.docker_user);
	free(creds.table_path);
	free(creds.token_path);
	memset(&creds, 0, sizeof creds);
}

/* ---- setting ---- */

bool credentials_set_git(const char *host, const char *username, const char *secret, char *error,
			 size_t error_size)
{
	if (!check_entry("host", host, username, secret, error, error_size) ||
	    !table_put(&creds.git, host, username, secret, error, error_size))
		return false;
	save();
	return true;
}

bool credentials_set_registry(const char *registry, const char *username, const char *secret,
			      char *error, size_t error_size)
{
	if (!check_entry("registry", registry, username, secret, error, error_size) ||
	    !table_put(&creds.registries, registry, username, secret, error, error_size))
		return false;
	save();
	credentials_docker_sync(creds.docker_user);
	return true;
}

bool credentials_remove_git(const char *host)
{
	if (!table_remove(&creds.git, host))
		return false;
	save();
	return true;
}

bool credentials_remove_registry(const char *registry)
{
	if (!table_remove(&creds.registries, registry))
		return false;
	save();
	credentials_docker_sync(creds.docker_user);
	return true;
}

void credentials_foreach_registry(void (*fn)(const char *registry, void *ctx), void *ctx)
{
	for (size_t i = 0; i < creds.registries.count; i++)
		fn(creds.registries.items[i].host, ctx);
}

/* ---- AWS ---- */

/* arn:aws[-a-z]*:iam::DIGITS:role/NAME, NAME of IAM's characters. */
static bool valid_role_arn(const char *arn)
{
	if (strlen(arn) > MAX_ARN || strncmp(arn, "arn:aws", 7) != 0)
		return false;
	const char *c = arn + 7;
	while (*c == '-' || (*c >= 'a' && *c <= 'z'))
		c++;
	if (strncmp(c, ":iam::", 6) != 0)
		return false;
	c += 6;
	const char *digits = c;
	while (isdigit((unsigned char)*c))
		c++;
	if (c == digits || c - digits > 12 || strncmp(c, ":role/", 6) != 0)
		return false;
	c += 6;
	if (!*c)
		return false;
	for (; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("+=,.@_/-", *c))
			return false;
	return true;
}

/* us-east-1, us-gov-west-1, ap-southeast-2, cn-north-1: letters in
 * dash-separated words, then a number. */
static bool valid_region(const char *region)
{
	size_t len = strlen(region);
	if (len < 4 || len > 32 || !islower((unsigned char)region[0]))
		return false;
	const char *last = strrchr(region, '-');
	if (!last || !last[1])
		return false;
	for (const char *c = region; c < last; c++)
		if (!islower((unsigned char)*c) && !(*c == '-' && c[1] != '-' && c[1] != '\0'))
			return false;
	for (const char *c = last + 1; *c; c++)
		if (!isdigit((unsigned char)*c))
			return false;
	return true;
}

static bool valid_token(const char *token)
{
	size_t len = strlen(token);
	if (len == 0 || len > MAX_TOKEN)
		return false;
	for (const char *c = token; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			return false;
	return true;
}

bool credentials_set_aws(const char *role_arn, const char *token, const char *region,
			 bool *write_failed, char *error, size_t error_size)
{
	*write_failed = false;
	if (!valid_role_arn(role_arn))
		return text_fail(error, error_size,
				 "roleArn %.200s is not a role's ARN "
				 "(arn:aws:iam::ACCOUNT:role/NAME)",
				 role_arn);
	if (!valid_region(region))
		return text_fail(error, error_size,
				 "region %.64s is not an AWS region (such as us-east-1)", region);
	if (!valid_token(token))
		return text_fail(error, error_size,
				 "webIdentityToken must be 1 to %d printable ASCII characters "
				 "(a JWT)",
				 MAX_TOKEN);
	/* Masked before the file exists: nothing can show it unmasked. */
	mask_token(token);
	if (!io_replace_file(creds.token_path, token, strlen(token), 0600, 0)) {
		*write_failed = true;
		int saved = errno;
		text_fail(error, error_size, "cannot write %s", creds.token_path);
		errno = saved;
		return false;
	}
	free(creds.role_arn);
	free(creds.region);
	creds.role_arn = xstrdup(role_arn);
	creds.region = xstrdup(region);
	save();
	return true;
}

bool credentials_remove_aws(void)
{
	if (!creds.role_arn)
		return false;
	unlink(creds.token_path);
	mask_token(NULL);
	free(creds.role_arn);
	free(creds.region);
	creds.role_arn = creds.region = NULL;
	save();
	return true;
}

void credentials_env_foreach(void (*fn)(const char *entry, void *ctx), void *ctx)
{
	if (!creds.role_arn)
		return;
	char *entries[] = {
		xasprintf("AWS_ROLE_ARN=%s", creds.role_arn),
		xasprintf("AWS_REGION=%s", creds.region),
		/* Debian 12's botocore (1.29) and AWS CLI v1 read only this one. */
		xasprintf("AWS_DEFAULT_REGION=%s", creds.region),
		xasprintf("AWS_WEB_IDENTITY_TOKEN_FILE=%s", creds.token_path),
	};
	for (size_t i = 0; i < sizeof entries / sizeof *entries; i++) {
		fn(entries[i], ctx);
		free(entries[i]);
	}
}

/* ---- what the helpers print ---- */

char *credentials_git_answer(const char *protocol, const char *host)
{
	if (strcmp(protocol, "https") != 0 && strcmp(protocol, "http") != 0)
		return NULL;
	const struct entry *entry = find(&creds.git, host);
	char *value = entry ? secret_value(entry->secret) : NULL;
	if (!value)
		return NULL;
	if (strpbrk(value, "\r\n")) {
		/* git's protocol is a line per attribute: such a value would end
		 * the password early and could set other attributes. */
		log_msg(LOG_LEVEL_WARNING,
			"the secret %s holds a line end: git cannot be given it for %s",
			entry->secret, host);
		wipe_free(value);
		return NULL;
	}
	char *answer = xasprintf("username=%s\npassword=%s\n", entry->username, value);
	wipe_free(value);
	return answer;
}

/* registry.example:5000 out of https://registry.example:5000/v1/ (what
 * Docker hands a helper varies with the command and the registry). */
static char *registry_of(const char *server)
{
	const char *start = strstr(server, "://");
	start = start ? start + 3 : server;
	size_t len = strcspn(start, "/");
	return xstrndup(start, len);
}

static char *json_text(cJSON *object)
{
	char *text = cJSON_PrintUnformatted(object);
	cJSON_Delete(object);
	return text;
}

char *credentials_registry_answer(const char *server)
{
	char *registry = registry_of(server);
	const struct entry *entry = find(&creds.registries, registry);
	free(registry);
	char *value = entry ? secret_value(entry->secret) : NULL;
	if (!value)
		return NULL;
	cJSON *answer = cJSON_CreateObject();
	cJSON_AddStringToObject(answer, "ServerURL", server);
	cJSON_AddStringToObject(answer, "Username", entry->username);
	cJSON *secret = cJSON_AddStringToObject(answer, "Secret", value);
	wipe_free(value);
	char *text = cJSON_PrintUnformatted(answer);
	explicit_bzero(secret->valuestring, strlen(secret->valuestring));
	cJSON_Delete(answer);
	return text;
}

char *credentials_registry_list(void)
{
	cJSON *list = cJSON_CreateObject();
	for (size_t i = 0; i < creds.registries.count; i++)
		cJSON_AddStringToObject(list, creds.registries.items[i].host,
					creds.registries.items[i].username);
	return json_text(list);
}
