/* ctl-exec.c: boxctl exec. Streams the command's output as it comes and
 * exits with the command's status. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "xalloc.h"

struct exec_stream {
	char *line; /* an NDJSON line being assembled */
	size_t length, capacity;
	int exit_status; /* -1 until the exit event */
	bool failed;
};

static void write_all(int fd, const char *text)
{
	size_t left = strlen(text);
	while (left) {
		ssize_t n = write(fd, text, left);
		if (n <= 0)
			return;
		text += n;
		left -= (size_t)n;
	}
}

static int status_of(const cJSON *result)
{
	const cJSON *code = cJSON_GetObjectItem(result, "exitCode");
	return cJSON_IsNumber(code) ? (int)code->valuedouble & 255 : 1;
}

static void handle_event(struct exec_stream *s, const char *line)
{
	cJSON *event = cJSON_Parse(line);
	if (!event)
		return;
	const cJSON *type = cJSON_GetObjectItem(event, "type");
	const cJSON *data = cJSON_GetObjectItem(event, "data");
	const cJSON *error = cJSON_GetObjectItem(event, "error");
	const char *kind = cJSON_IsString(type) ? type->valuestring : "";
	if (error) {
		const cJSON *message = cJSON_GetObjectItem(error, "message");
		fprintf(stderr, "boxctl: %s\n",
			cJSON_IsString(message) ? message->valuestring : line);
		s->failed = true;
	} else if (!strcmp(kind, "stdout") && cJSON_IsString(data))
		write_all(STDOUT_FILENO, data->valuestring);
	else if (!strcmp(kind, "stderr") && cJSON_IsString(data))
		write_all(STDERR_FILENO, data->valuestring);
	else if (!strcmp(kind, "lost"))
		fprintf(stderr, "boxctl: %.0f bytes of output were not streamed; see the log\n",
			cJSON_GetObjectItem(event, "bytes")->valuedouble);
	else if (!strcmp(kind, "exit")) {
		s->exit_status = status_of(event);
		const cJSON *message = cJSON_GetObjectItem(event, "message");
		const cJSON *log_error = cJSON_GetObjectItem(event, "logError");
		if (cJSON_IsTrue(cJSON_GetObjectItem(event, "timedOut")))
			fprintf(stderr, "boxctl: the command timed out\n");
		if (cJSON_IsString(message))
			fprintf(stderr, "boxctl: %s\n", message->valuestring);
		if (cJSON_IsString(log_error))
			fprintf(stderr, "boxctl: %s\n", log_error->valuestring);
	}
	cJSON_Delete(event);
}

static bool on_data(void *arg, const char *data, size_t length)
{
	struct exec_stream *s = arg;
	for (size_t i = 0; i < length; i++) {
		if (s->length + 1 >= s->capacity)
			s->line = xrealloc(s->line,
					   s->capacity = s->capacity ? s->capacity * 2 : 4096);
		if (data[i] != '\n') {
			s->line[s->length++] = data[i];
			continue;
		}
		s->line[s->length] = '\0';
		handle_event(s, s->line);
		s->length = 0;
	}
	return true;
}

#define EXEC_USAGE \
	"usage: boxctl exec [--cwd D] [--timeout S] [--env K=V]... [--bg] [-n] [--json] -- CMD..."

/* boxctl's stdin, for the command: read to its end unless it is a terminal
 * or -n was given. The API takes it as text, so a NUL byte is refused. */
static bool add_stdin(cJSON *body, int *usage)
{
	if (isatty(STDIN_FILENO))
		return true;
	size_t length;
	char *data = ctl_read_all(STDIN_FILENO, &length);
	if (!data) {
		if (errno == EBADF)
			return true; /* no stdin at all */
		*usage = ctl_usage_error("exec", "cannot read stdin: %s", strerror(errno));
		return false;
	}
	if (memchr(data, '\0', length)) {
		free(data);
		*usage = ctl_usage_error("exec",
					 "stdin holds a NUL byte; the API takes stdin as text "
					 "(use -n to pass none)");
		return false;
	}
	if (length)
		cJSON_AddStringToObject(body, "stdin", data);
	free(data);
	return true;
}

static cJSON *parse_options(int argc, char **argv, bool *background, int *usage)
{
	cJSON *body = cJSON_CreateObject();
	cJSON *env = NULL;
	bool no_stdin = false;
	int i = 1;
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(arg, "--bg"))
			*background = true;
		else if (!strcmp(arg, "-n") || !strcmp(arg, "--no-stdin"))
			no_stdin = true;
		else if (!strcmp(arg, "--cwd") && value)
			cJSON_AddStringToObject(body, "cwd", argv[++i]);
		else if (!strcmp(arg, "--timeout") && value)
			cJSON_AddNumberToObject(body, "timeoutSec", atof(argv[++i]));
		else if (!strcmp(arg, "--env") && value && strchr(value, '=')) {
			if (!env)
				env = cJSON_AddObjectToObject(body, "env");
			char *name = xstrndup(value, (size_t)(strchr(value, '=') - value));
			cJSON_AddStringToObject(env, name, strchr(value, '=') + 1);
			free(name);
			i++;
		} else if (arg[0] == '-') {
			*usage = ctl_usage_error("exec", "unexpected `%s` (" EXEC_USAGE ")", arg);
			cJSON_Delete(body);
			return NULL;
		} else
			break; /* the command starts without a `--` */
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc) {
		*usage = ctl_usage_error("exec", "give the command after `--`");
		cJSON_Delete(body);
		return NULL;
	}
	size_t length = 0;
	for (int j = i; j < argc && argv[j]; j++)
		length += strlen(argv[j]) + 1;
	char *cmd = xcalloc(1, length + 1);
	for (int j = i; j < argc && argv[j]; j++) {
		strcat(cmd, argv[j]);
		if (j + 1 < argc)
			strcat(cmd, " ");
	}
	cJSON_AddStringToObject(body, "cmd", cmd);
	free(cmd);
	if (*background)
		cJSON_AddTrueToObject(body, "background");
	if (!no_stdin && !add_stdin(body, usage)) {
		cJSON_Delete(body);
		return NULL;
	}
	return body;
}

static int run_plain(struct ctl *ctl, cJSON *body, bool background)
{
	cJSON *answer;
	int status = ctl_call(ctl, "POST", "/v1/exec", body, &answer);
	if (status != CTL_OK)
		return status;
	if (!ctl_print_json(ctl, answer)) {
		const cJSON *id = cJSON_GetObjectItem(answer, "bgId");
		const cJSON *log = cJSON_GetObjectItem(answer, "logPath");
		printf("%s started; log %s\n", cJSON_IsString(id) ? id->valuestring : "?",
		       cJSON_IsString(log) ? log->valuestring : "?");
	}
	int code = background ? CTL_OK : status_of(answer);
	cJSON_Delete(answer);
	return code;
}

/* boxctl exec --show ID: GET /v1/exec/{id}. An ended command's output is
 * written as it was and its status is boxctl's; a running one is said so. */
static int run_show(struct ctl *ctl, int argc, char **argv)
{
	if (argc != 3)
		return ctl_usage_error("exec", "usage: boxctl exec --show ID");
	char *encoded = ctl_url_encode(argv[2]);
	char *path = xasprintf("/v1/exec/%s", encoded);
	free(encoded);
	cJSON *answer;
	int status = ctl_call(ctl, "GET", path, NULL, &answer);
	free(path);
	if (status != CTL_OK)
		return status;
	if (ctl_print_json(ctl, answer)) {
		cJSON_Delete(answer);
		return CTL_OK;
	}
	const char *state = cJSON_GetStringValue(cJSON_GetObjectItem(answer, "state"));
	const char *out = cJSON_GetStringValue(cJSON_GetObjectItem(answer, "stdout"));
	const char *err = cJSON_GetStringValue(cJSON_GetObjectItem(answer, "stderr"));
	const char *log = cJSON_GetStringValue(cJSON_GetObjectItem(answer, "logPath"));
	if (out)
		write_all(STDOUT_FILENO, out);
	if (err)
		write_all(STDERR_FILENO, err);
	int code = CTL_OK;
	if (state && !strcmp(state, "running"))
		fprintf(stderr, "boxctl: %s is still running; log %s\n", argv[2], log ? log : "?");
	else
		code = status_of(answer);
	cJSON_Delete(answer);
	return code;
}

static int run_exec(struct ctl *ctl, int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--show"))
		return run_show(ctl, argc, argv);
	bool background = false;
	int usage = CTL_USAGE;
	cJSON *body = parse_options(argc, argv, &background, &usage);
	if (!body)
		return usage;
	if (background || ctl->json) {
		int code = run_plain(ctl, body, background);
		cJSON_Delete(body);
		return code;
	}
	struct client *client = ctl_client(ctl);
	if (!client) {
		cJSON_Delete(body);
		return CTL_API_ERROR;
	}
	char *text = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	struct exec_stream stream = {.exit_status = -1};
	struct client_response response = {0};
	char error[256];
	bool ok = client_request_stream(client, "POST", "/v1/exec", "application/json", text,
					strlen(text), "Accept: application/x-ndjson\r\n", on_data,
					&stream, &response, error, sizeof error);
	free(text);
	if (stream.length) { /* an error answer is one JSON object without a newline */
		stream.line[stream.length] = '\0';
		handle_event(&stream, stream.line);
	}
	free(stream.line);
	client_response_free(&response);
	if (!ok) {
		fprintf(stderr, "boxctl: %s\n", error);
		return CTL_API_ERROR;
	}
	if (stream.failed || stream.exit_status < 0)
		return CTL_API_ERROR;
	return stream.exit_status;
}

const struct ctl_command ctl_exec_commands[] = {
	{"exec",
	 "  exec [--cwd D] [--timeout S] [--env K=V]... [--bg] [-n] -- CMD...\n"
	 "                              run a command with boxctl's stdin (none with -n or\n"
	 "                              from a terminal); exits with its status\n"
	 "  exec --show ID              a command's state and output, running or ended",
	 run_exec},
	{0},
};
