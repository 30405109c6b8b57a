/* ctl-files-ops.c: boxctl files stat|ls|mkdir|mv|rm|chmod|put|get, one
 * subcommand per call of "Files one at a time" (API.md). `files get` is
 * `boxctl get` (ctl-files.c). Human lines by default, the API's JSON with
 * --json. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl-files.h"
#include "ctl.h"
#include "xalloc.h"

/* One entry as `ls -l` would put it, roughly: type, mode, size, path. */
static void print_entry(const cJSON *entry)
{
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(entry, "type"));
	const char *target = cJSON_GetStringValue(cJSON_GetObjectItem(entry, "target"));
	const char *sha256 = cJSON_GetStringValue(cJSON_GetObjectItem(entry, "sha256"));
	printf("%-4s %s %12.0f  %s%s%s%s%s\n", type ? type : "?",
	       cJSON_GetStringValue(cJSON_GetObjectItem(entry, "mode")),
	       cJSON_GetNumberValue(cJSON_GetObjectItem(entry, "size")),
	       cJSON_GetStringValue(cJSON_GetObjectItem(entry, "path")), target ? " -> " : "",
	       target ? target : "", sha256 ? "  sha256:" : "", sha256 ? sha256 : "");
}

/* Calls the API and prints its answer (an entry, unless `list`). */
static int call_and_print(struct ctl *ctl, const char *method, const char *target,
			  const cJSON *body, bool list)
{
	cJSON *answer = NULL;
	int status = ctl_call(ctl, method, target, body, &answer);
	if (status == CTL_OK && !ctl_print_json(ctl, answer)) {
		const cJSON *entry;
		if (list) {
			cJSON_ArrayForEach(entry, cJSON_GetObjectItem(answer, "entries"))
				print_entry(entry);
			if (cJSON_IsTrue(cJSON_GetObjectItem(answer, "truncated")))
				fprintf(stderr, "boxctl: the listing stops at 10,000 entries\n");
		} else if (cJSON_GetObjectItem(answer, "type")) {
			print_entry(answer);
		}
	}
	cJSON_Delete(answer);
	return status;
}

static char *query_target(const char *route, const char *path, const char *more)
{
	char *encoded = ctl_url_encode(path);
	char *target = xasprintf("%s?path=%s%s", route, encoded, more);
	free(encoded);
	return target;
}

static int files_stat(struct ctl *ctl, int argc, char **argv)
{
	bool hash = argc == 3 && strcmp(argv[2], "--hash") == 0;
	if (argc != 2 && !hash)
		return ctl_usage_error("files stat", "takes PATH [--hash]");
	char *target = query_target("/v1/files/stat", argv[1], hash ? "&hash=1" : "");
	int status = call_and_print(ctl, "GET", target, NULL, false);
	free(target);
	return status;
}

static int files_ls(struct ctl *ctl, int argc, char **argv)
{
	const char *path = ".";
	int depth = 1;
	for (int i = 1; i < argc; i++) {
		if ((strcmp(argv[i], "--depth") == 0 || strcmp(argv[i], "-d") == 0) && i + 1 < argc)
			depth = atoi(argv[++i]);
		else if (argv[i][0] != '-' && strcmp(path, ".") == 0)
			path = argv[i];
		else
			return ctl_usage_error("files ls", "takes [PATH] [--depth N]");
	}
	char more[32];
	snprintf(more, sizeof more, "&depth=%d", depth);
	char *target = query_target("/v1/files/list", path, more);
	int status = call_and_print(ctl, "GET", target, NULL, true);
	free(target);
	return status;
}

static int files_mkdir(struct ctl *ctl, int argc, char **argv)
{
	bool parents = argc == 3 && strcmp(argv[2], "-p") == 0;
	if (argc == 3 && strcmp(argv[1], "-p") == 0) {
		parents = true;
		argv[1] = argv[2];
	} else if (argc != 2 && !parents) {
		return ctl_usage_error("files mkdir", "takes [-p] PATH");
	}
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "path", argv[1]);
	cJSON_AddBoolToObject(body, "parents", parents);
	int status = call_and_print(ctl, "POST", "/v1/files/mkdir", body, false);
	cJSON_Delete(body);
	return status;
}

static int files_mv(struct ctl *ctl, int argc, char **argv)
{
	bool overwrite = argc == 4 && strcmp(argv[1], "-f") == 0;
	if (argc != 3 && !overwrite)
		return ctl_usage_error("files mv", "takes [-f] FROM TO");
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "from", argv[overwrite ? 2 : 1]);
	cJSON_AddStringToObject(body, "to", argv[overwrite ? 3 : 2]);
	cJSON_AddBoolToObject(body, "overwrite", overwrite);
	int status = call_and_print(ctl, "POST", "/v1/files/move", body, false);
	cJSON_Delete(body);
	return status;
}

static int files_rm(struct ctl *ctl, int argc, char **argv)
{
	bool recursive = argc == 3 && strcmp(argv[1], "-r") == 0;
	if (argc != 2 && !recursive)
		return ctl_usage_error("files rm", "takes [-r] PATH");
	char *target =
		query_target("/v1/files", argv[recursive ? 2 : 1], recursive ? "&recursive=1" : "");
	cJSON *answer = NULL;
	int status = ctl_call(ctl, "DELETE", target, NULL, &answer);
	if (status == CTL_OK && !ctl_print_json(ctl, answer))
		printf("removed %s (%.0f entries)\n",
		       cJSON_GetStringValue(cJSON_GetObjectItem(answer, "path")),
		       cJSON_GetNumberValue(cJSON_GetObjectItem(answer, "removed")));
	cJSON_Delete(answer);
	free(target);
	return status;
}

static int files_chmod(struct ctl *ctl, int argc, char **argv)
{
	if (argc != 3)
		return ctl_usage_error("files chmod", "takes MODE PATH (MODE in octal: 0644)");
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "path", argv[2]);
	cJSON_AddStringToObject(body, "mode", argv[1]);
	int status = call_and_print(ctl, "POST", "/v1/files/chmod", body, false);
	cJSON_Delete(body);
	return status;
}

/* The local file mapped (not read into memory), or stdin read whole. */
static int files_put(struct ctl *ctl, int argc, char **argv)
{
	const char *mode = NULL;
	if (argc == 5 && strcmp(argv[3], "--mode") == 0)
		mode = argv[4];
	else if (argc != 3)
		return ctl_usage_error("files put",
				       "takes LOCAL PATH [--mode 0644] (LOCAL - is stdin)");
	bool from_stdin = strcmp(argv[1], "-") == 0;
	int fd = from_stdin ? 0 : open(argv[1], O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "boxctl: cannot read %s: %s\n", argv[1], strerror(errno));
		return CTL_API_ERROR;
	}
	size_t length = 0;
	void *data = NULL;
	bool mapped = !from_stdin && S_ISREG(st.st_mode) && st.st_size > 0;
	if (mapped) {
		length = (size_t)st.st_size;
		data = mmap(NULL, length, PROT_READ, MAP_PRIVATE, fd, 0);
		mapped = data != MAP_FAILED;
	}
	if (!mapped)
		data = ctl_read_all(fd, &length);
	if (fd > 0)
		close(fd);
	if (!data || data == MAP_FAILED) {
		fprintf(stderr, "boxctl: cannot read %s: %s\n", argv[1], strerror(errno));
		return CTL_API_ERROR;
	}
	char more[64] = "";
	if (mode)
		snprintf(more, sizeof more, "&mode=%s", mode);
	char *target = query_target("/v1/files", argv[2], more);
	cJSON *answer = NULL;
	int status = ctl_call_body(ctl, "PUT", target, "application/octet-stream", data, length,
				   &answer);
	if (status == CTL_OK && !ctl_print_json(ctl, answer))
		print_entry(answer);
	cJSON_Delete(answer);
	free(target);
	if (mapped)
		munmap(data, length);
	else
		free(data);
	return status;
}

static const struct {
	const char *name;
	int (*run)(struct ctl *ctl, int argc, char **argv);
} subcommands[] = {
	{"stat", files_stat}, {"ls", files_ls},       {"mkdir", files_mkdir},
	{"mv", files_mv},     {"rm", files_rm},       {"chmod", files_chmod},
	{"put", files_put},   {"get", ctl_files_get},
};

int ctl_files_run(struct ctl *ctl, int argc, char **argv)
{
	for (size_t i = 0; argc > 1 && i < sizeof subcommands / sizeof *subcommands; i++)
		if (strcmp(argv[1], subcommands[i].name) == 0)
			return subcommands[i].run(ctl, argc - 1, argv + 1);
	return ctl_usage_error("files", "takes stat|ls|mkdir|mv|rm|chmod|put|get");
}
