/* fuzz-config: boxd's settings parser (config.c), file and flags.
 * Input: the config file's bytes, then optionally "\0\0" and NUL-separated
 * extra command-line arguments. The file is handed over as /proc/self/fd/N
 * of a memfd, as config_parse reads a path. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"

#define MAX_ARGS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t file_size = size;
	for (size_t i = 0; i + 1 < size; i++) {
		if (data[i] == 0 && data[i + 1] == 0) {
			file_size = i;
			break;
		}
	}
	int fd = memfd_create("fuzz-config", 0);
	if (fd < 0 || write(fd, data, file_size) != (ssize_t)file_size)
		abort();
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

	char *copy = malloc(size + 1);
	memcpy(copy, data, size);
	copy[size] = '\0';
	char *argv[MAX_ARGS + 4] = {"boxd", "--config", path};
	int argc = 3;
	for (size_t at = file_size + 2; at < size && argc < MAX_ARGS + 3;
	     at += strlen(copy + at) + 1)
		argv[argc++] = copy + at;
	argv[argc] = NULL;

	struct boxd_config config;
	memset(&config, 0, sizeof config);
	char error[512];
	bool help, version;
	config_parse(&config, argc, argv, error, sizeof error, &help, &version);
	config_free(&config);
	free(copy);
	close(fd);
	return 0;
}
