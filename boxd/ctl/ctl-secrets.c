/* ctl-secrets.c: boxctl secrets set NAME..., boxctl secrets ls, and
 * boxctl env set SERVICE [FILE] (service settings, a dotenv body).
 * Values come from boxctl's own environment, never from the command line,
 * so they stay out of shell history and `ps`. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "xalloc.h"

static int print_names(struct ctl *ctl, cJSON *answer)
{
	if (!ctl_print_json(ctl, answer)) {
		const cJSON *name;
		cJSON_ArrayForEach(name,
				   cJSON_GetObjectItem(answer, "names")) if (cJSON_IsString(name))
			printf("%s\n", name->valuestring);
	}
	cJSON_Delete(answer);
	return CTL_OK;
}

static int secrets_set(struct ctl *ctl, int argc, char **argv)
{
	cJSON *body = cJSON_CreateObject();
	cJSON *secrets = cJSON_AddObjectToObject(body, "secrets");
	for (int i = 2; i < argc; i++) {
		const char *value = getenv(argv[i]);
		if (!value) {
			cJSON_Delete(body);
			return ctl_usage_error("secrets",
					       "%s is not set in the environment "
					       "(usage: NAME=value boxctl secrets set NAME...)",
					       argv[i]);
		}
		cJSON_AddStringToObject(secrets, argv[i], value);
	}
	cJSON *answer;
	int status = ctl_call(ctl, "PUT", "/v1/secrets", body, &answer);
	cJSON_Delete(body);
	return status == CTL_OK ? print_names(ctl, answer) : status;
}

static int run_secrets(struct ctl *ctl, int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "set") == 0)
		return secrets_set(ctl, argc, argv);
	if (argc == 2 && strcmp(argv[1], "ls") == 0) {
		cJSON *answer;
		int status = ctl_call(ctl, "GET", "/v1/secrets", NULL, &answer);
		return status == CTL_OK ? print_names(ctl, answer) : status;
	}
	return ctl_usage_error("secrets", "usage: boxctl secrets set NAME... | boxctl secrets ls");
}

/* boxctl env set SERVICE [FILE]: PUT /v1/env/{service} with the dotenv
 * text of FILE, or of stdin. */
static int run_env(struct ctl *ctl, int argc, char **argv)
{
	if ((argc != 3 && argc != 4) || strcmp(argv[1], "set") != 0)
		return ctl_usage_error(
			"env",
			"usage: boxctl env set SERVICE [FILE] (else the dotenv text on stdin)");
	const char *service = argv[2], *file = argc == 4 ? argv[3] : NULL;
	int fd = STDIN_FILENO;
	if (file && strcmp(file, "-") != 0 && (fd = open(file, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "boxctl env: cannot open %s: %s\n", file, strerror(errno));
		return CTL_USAGE;
	}
	if (fd == STDIN_FILENO && isatty(fd))
		fprintf(stderr,
			"boxctl env: reading the settings from the terminal; end with Ctrl-D\n");
	size_t length;
	char *text = ctl_read_all(fd, &length);
	if (fd != STDIN_FILENO)
		close(fd);
	if (!text) {
		fprintf(stderr, "boxctl env: cannot read the settings: %s\n", strerror(errno));
		return CTL_USAGE;
	}
	char *encoded = ctl_url_encode(service);
	char *path = xasprintf("/v1/env/%s", encoded);
	free(encoded);
	cJSON *answer;
	int status = ctl_call_body(ctl, "PUT", path, "text/plain", text, length, &answer);
	free(path);
	free(text);
	if (status != CTL_OK)
		return status;
	if (!ctl_print_json(ctl, answer)) {
		const char *written = cJSON_GetStringValue(cJSON_GetObjectItem(answer, "path"));
		printf("wrote %s:", written ? written : "?");
		const cJSON *name;
		cJSON_ArrayForEach(name,
				   cJSON_GetObjectItem(answer, "names")) if (cJSON_IsString(name))
			printf(" %s", name->valuestring);
		printf("\n");
	}
	cJSON_Delete(answer);
	return CTL_OK;
}

const struct ctl_command ctl_env_commands[] = {
	{"env",
	 "  env set SERVICE [FILE]      write a service's settings (dotenv, from FILE or\n"
	 "                              stdin) to WORK/.sbx/env/SERVICE.env",
	 run_env},
	{0},
};

const struct ctl_command ctl_secrets_commands[] = {
	{"secrets",
	 "  secrets set NAME...         replace the secrets with these variables of\n"
	 "                              boxctl's environment (values never on the\n"
	 "                              command line)\n"
	 "  secrets ls                  the names of the secrets",
	 run_secrets},
	{0},
};
