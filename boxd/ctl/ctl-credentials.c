/* ctl-credentials.c: boxctl credentials [ls], credentials git|registry
 * NAME USER SECRET, credentials aws ROLE_ARN REGION --token-file F|-, and
 * credentials rm git HOST | rm registry REG | rm aws. SECRET is a secret's
 * name (boxctl secrets set); the AWS token comes from a file or stdin, never
 * the command line (it would show in `ps` and shell history). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "xalloc.h"

#define USAGE                                                                   \
	"usage: boxctl credentials [ls] | credentials git HOST USER SECRET |\n" \
	"       credentials registry REGISTRY USER SECRET |\n"                  \
	"       credentials aws ROLE_ARN REGION --token-file FILE|- |\n"        \
	"       credentials rm git HOST | rm registry REGISTRY | rm aws"

static const char *text_of(const cJSON *object, const char *key)
{
	const char *value = cJSON_GetStringValue(cJSON_GetObjectItem(object, key));
	return value ? value : "?";
}

static void print_entries(const cJSON *list, const char *kind, const char *key)
{
	const cJSON *item;
	cJSON_ArrayForEach(item, list)
	{
		bool set = cJSON_IsTrue(cJSON_GetObjectItem(item, "secretSet"));
		printf("%-9s %-32s %-20s %s%s\n", kind, text_of(item, key),
		       text_of(item, "username"), text_of(item, "secret"),
		       set ? "" : " (no such secret now)");
	}
}

static int print_table(struct ctl *ctl, cJSON *answer)
{
	if (!ctl_print_json(ctl, answer)) {
		print_entries(cJSON_GetObjectItem(answer, "git"), "git", "host");
		print_entries(cJSON_GetObjectItem(answer, "registries"), "registry", "registry");
		const cJSON *aws = cJSON_GetObjectItem(answer, "aws");
		if (cJSON_IsObject(aws))
			printf("%-9s %-32s %-20s %s\n", "aws", text_of(aws, "roleArn"),
			       text_of(aws, "region"), text_of(aws, "tokenFile"));
	}
	cJSON_Delete(answer);
	return CTL_OK;
}

static int call_and_print(struct ctl *ctl, const char *method, const char *path, const cJSON *body)
{
	cJSON *answer;
	int status = ctl_call(ctl, method, path, body, &answer);
	return status == CTL_OK ? print_table(ctl, answer) : status;
}

static int set_entry(struct ctl *ctl, char **argv, const char *key)
{
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, key, argv[2]);
	cJSON_AddStringToObject(body, "username", argv[3]);
	cJSON_AddStringToObject(body, "secret", argv[4]);
	char *path = xasprintf("/v1/credentials/%s", argv[1]);
	int status = call_and_print(ctl, "PUT", path, body);
	free(path);
	cJSON_Delete(body);
	return status;
}

/* The token, its line ends trimmed (a file ends with one). */
static char *read_token(const char *file)
{
	int fd = STDIN_FILENO;
	if (strcmp(file, "-") != 0 && (fd = open(file, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "boxctl credentials: cannot open %s: %s\n", file, strerror(errno));
		return NULL;
	}
	size_t length;
	char *token = ctl_read_all(fd, &length);
	if (fd != STDIN_FILENO)
		close(fd);
	if (!token) {
		fprintf(stderr, "boxctl credentials: cannot read the token: %s\n", strerror(errno));
		return NULL;
	}
	while (length && (token[length - 1] == '\n' || token[length - 1] == '\r'))
		token[--length] = '\0';
	return token;
}

static int set_aws(struct ctl *ctl, int argc, char **argv)
{
	if (argc != 6 || strcmp(argv[4], "--token-file") != 0)
		return ctl_usage_error("credentials",
				       "usage: boxctl credentials aws ROLE_ARN REGION --token-file "
				       "FILE|- (the token from a file or stdin, never argv)");
	char *token = read_token(argv[5]);
	if (!token)
		return CTL_USAGE;
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "roleArn", argv[2]);
	cJSON_AddStringToObject(body, "region", argv[3]);
	cJSON *value = cJSON_AddStringToObject(body, "webIdentityToken", token);
	explicit_bzero(token, strlen(token));
	free(token);
	int status = call_and_print(ctl, "PUT", "/v1/credentials/aws", body);
	explicit_bzero(value->valuestring, strlen(value->valuestring));
	cJSON_Delete(body);
	return status;
}

static int remove_entry(struct ctl *ctl, int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[2], "aws") == 0)
		return call_and_print(ctl, "DELETE", "/v1/credentials/aws", NULL);
	if (argc != 4 || (strcmp(argv[2], "git") != 0 && strcmp(argv[2], "registry") != 0))
		return ctl_usage_error("credentials", USAGE);
	char *encoded = ctl_url_encode(argv[3]);
	char *path = xasprintf("/v1/credentials/%s/%s", argv[2], encoded);
	free(encoded);
	int status = call_and_print(ctl, "DELETE", path, NULL);
	free(path);
	return status;
}

static int run_credentials(struct ctl *ctl, int argc, char **argv)
{
	if (argc == 1 || (argc == 2 && strcmp(argv[1], "ls") == 0))
		return call_and_print(ctl, "GET", "/v1/credentials", NULL);
	if (argc == 5 && strcmp(argv[1], "git") == 0)
		return set_entry(ctl, argv, "host");
	if (argc == 5 && strcmp(argv[1], "registry") == 0)
		return set_entry(ctl, argv, "registry");
	if (argc >= 2 && strcmp(argv[1], "aws") == 0)
		return set_aws(ctl, argc, argv);
	if (argc >= 2 && strcmp(argv[1], "rm") == 0)
		return remove_entry(ctl, argc, argv);
	return ctl_usage_error("credentials", USAGE);
}

const struct ctl_command ctl_credentials_commands[] = {
	{"credentials",
	 "  credentials [ls]            the git hosts, registries and AWS role set\n"
	 "                              (secret names, never values)\n"
	 "  credentials git HOST USER SECRET\n"
	 "  credentials registry REGISTRY USER SECRET\n"
	 "                              git / Docker in the box log in with the secret\n"
	 "                              named SECRET (see boxctl secrets set)\n"
	 "  credentials aws ROLE_ARN REGION --token-file FILE|-\n"
	 "                              the AWS role; the web identity token from\n"
	 "                              FILE or stdin\n"
	 "  credentials rm git HOST | rm registry REGISTRY | rm aws",
	 run_credentials},
	{0},
};
