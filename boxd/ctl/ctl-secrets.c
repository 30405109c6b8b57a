/* ctl-secrets.c: boxctl secrets set NAME..., boxctl secrets ls.
 * Values come from boxctl's own environment, never from the command line,
 * so they stay out of shell history and `ps`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

static int print_names(struct ctl *ctl, cJSON *answer)
{
	if (!ctl_print_json(ctl, answer)) {
		const cJSON *name;
		cJSON_ArrayForEach(name, cJSON_GetObjectItem(answer, "names"))
			if (cJSON_IsString(name))
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
			return ctl_usage_error("secrets", "%s is not set in the environment "
					       "(usage: NAME=value boxctl secrets set NAME...)", argv[i]);
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

const struct ctl_command ctl_secrets_commands[] = {
	{"secrets", "  secrets set NAME...         replace the secrets with these variables of\n"
		    "                              boxctl's environment (values never on the command line)\n"
		    "  secrets ls                  the names of the secrets", run_secrets},
	{0},
};
