/* fuzz-dotenv.c: libFuzzer harness for the dotenv parser: any input parses
 * or fails with a message, and what parses has valid names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dotenv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dotenv env;
	char error[256];
	if (!dotenv_parse((const char *)data, size, &env, error, sizeof error)) {
		if (env.count != 0 || strncmp(error, "line ", 5) != 0 && !strstr(error, "NUL"))
			abort();
		return 0;
	}
	for (size_t i = 0; i < env.count; i++) {
		const char *name = env.entries[i].name;
		if (!name[0] || strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					     "0123456789_.-") != strlen(name))
			abort();
		size_t start, len;
		if (dotenv_url_password(env.entries[i].value, &start, &len) &&
		    start + len > strlen(env.entries[i].value))
			abort();
		dotenv_is_secret(name, env.entries[i].value);
	}
	dotenv_free(&env);
	return 0;
}
