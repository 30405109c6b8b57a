/* ctl-terminal.c: boxctl shell and boxctl attach: a command's terminal in
 * the box on this one, over GET /v1/exec/{id}/attach (a WebSocket).
 *
 * From a terminal boxctl puts it in raw mode, so every key (^C, ^Z, ^D)
 * goes to the command as a byte and the box's terminal does the echo and
 * the line editing; a change of this window's size follows as a resize.
 * Ctrl-P Ctrl-Q detaches (as docker's does): the command runs on, to be
 * attached again. With stdin not a terminal (attach only) its bytes go in
 * as they come and its end closes the command's stdin.
 *
 * boxctl exits with the command's status (128+N for signal N), 1 when the
 * session could not start or ended without the command's (the command
 * then still runs), 0 on a detach. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "base64.h"
#include "ctl-tty.h"
#include "ctl-ws.h"
#include "ctl.h"
#include "io.h"
#include "xalloc.h"

/* docker's detach keys: Ctrl-P then Ctrl-Q. */
#define KEY_CTRL_P 0x10
#define KEY_CTRL_Q 0x11
/* The longest command line a shell's words make. */
#define INPUT_CHUNK 65536
/* The API's longest timeoutSec: an interactive shell may idle a while. */
#define SHELL_TIMEOUT_SEC 3600

enum session_end { END_NONE, END_CLOSED, END_DROPPED, END_DETACHED, END_SIGNAL, END_FAILED };

struct session {
	struct ctl_ws ws;
	const char *id;
	bool raw;        /* stdin is a terminal, in raw mode */
	bool stdin_open; /* still read: a pipe's end closes the command's stdin */
	bool held_ctrl_p;
	int signal_fd;
	int exit_code; /* -1 until the exit event */
	int signal;    /* the one that ended boxctl (END_SIGNAL) */
	enum session_end end;
};

/* A notice during the session: in raw mode the terminal no longer turns
 * "\n" into "\r\n", so it is done here. */
static void notice(const struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void notice(const struct session *s, const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%sboxctl: %s%s", s->raw ? "\r\n" : "", text, s->raw ? "\r\n" : "\n");
}

static bool send_control(struct session *s, cJSON *control)
{
	char *text = cJSON_PrintUnformatted(control);
	bool ok = ctl_ws_send(&s->ws, WS_TEXT, text, strlen(text));
	free(text);
	cJSON_Delete(control);
	return ok;
}

static bool send_resize(struct session *s)
{
	int cols, rows;
	ctl_tty_size(STDIN_FILENO, &cols, &rows);
	cJSON *control = cJSON_CreateObject();
	cJSON *size = cJSON_AddArrayToObject(control, "resize");
	cJSON_AddItemToArray(size, cJSON_CreateNumber(cols));
	cJSON_AddItemToArray(size, cJSON_CreateNumber(rows));
	return send_control(s, control);
}

static bool send_close_stdin(struct session *s)
{
	cJSON *control = cJSON_CreateObject();
	cJSON_AddTrueToObject(control, "closeStdin");
	return send_control(s, control);
}

/* ---- what boxd sends ---- */

static void on_exit_event(struct session *s, const cJSON *event)
{
	const cJSON *code = cJSON_GetObjectItem(event, "exitCode");
	s->exit_code = cJSON_IsNumber(code) ? (int)code->valuedouble & 255 : 1;
	const char *message = cJSON_GetStringValue(cJSON_GetObjectItem(event, "message"));
	if (cJSON_IsTrue(cJSON_GetObjectItem(event, "timedOut")))
		notice(s, "the command timed out");
	if (message)
		notice(s, "%s", message);
}

static void on_text(struct session *s, const uint8_t *data, size_t length)
{
	cJSON *event = cJSON_ParseWithLength((const char *)data, length);
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(event, "type"));
	if (!type)
		type = "";
	if (!strcmp(type, "exit"))
		on_exit_event(s, event);
	else if (!strcmp(type, "lost"))
		notice(s,
		       "%.0f bytes of output were not shown (the log has them: boxctl procs log "
		       "%s)",
		       cJSON_GetNumberValue(cJSON_GetObjectItem(event, "bytes")), s->id);
	else if (!strcmp(type, "error")) {
		const char *message = cJSON_GetStringValue(cJSON_GetObjectItem(event, "message"));
		notice(s, "%s", message ? message : "boxd refused a control");
	}
	cJSON_Delete(event);
}

static void on_close(struct session *s, const uint8_t *data, size_t length)
{
	uint16_t code = WS_CLOSE_NORMAL;
	if (!ws_close_parse(data, length, &code) || code == WS_CLOSE_NO_STATUS)
		code = WS_CLOSE_NORMAL;
	/* The closing handshake: the server waits for ours (RFC 6455 5.5.1). */
	ctl_ws_send_close(&s->ws, code);
	if (s->exit_code < 0 && length > 2)
		notice(s, "boxd closed the session (%u): %.*s", code, (int)length - 2,
		       (const char *)data + 2);
	s->end = END_CLOSED;
}

static void on_event(struct session *s, const struct ctl_ws_event *event)
{
	switch (event->opcode) {
	case WS_BINARY:
		if (!io_write_all(STDOUT_FILENO, event->data, event->length))
			s->end = END_FAILED; /* nowhere to show the output */
		break;
	case WS_TEXT: on_text(s, event->data, event->length); break;
	case WS_PING: ctl_ws_send(&s->ws, WS_PONG, event->data, event->length); break;
	case WS_CLOSE: on_close(s, event->data, event->length); break;
	default: break;
	}
}

/* Handles every whole frame received so far. */
static void drain_frames(struct session *s)
{
	struct ctl_ws_event event;
	int found;
	while (s->end == END_NONE && (found = ctl_ws_next(&s->ws, &event)) == 1)
		on_event(s, &event);
	if (s->end == END_NONE && found < 0) {
		ctl_ws_send_close(&s->ws, (uint16_t)-found);
		notice(s, "boxd's WebSocket frames broke RFC 6455 (close code %d)", -found);
		s->end = END_DROPPED;
	}
}

static void on_socket(struct session *s)
{
	bool open = ctl_ws_receive(&s->ws);
	drain_frames(s);
	if (!open && s->end == END_NONE)
		s->end = END_DROPPED;
}

/* ---- what this side sends ---- */

/* Passes typed bytes on, minus the detach keys. A lone Ctrl-P is held
 * until the next key says whether it was one (it may come in a later read). */
static void send_typed(struct session *s, const uint8_t *data, size_t length)
{
	uint8_t *out = xmalloc(length + 1);
	size_t n = 0;
	for (size_t i = 0; i < length; i++) {
		if (s->held_ctrl_p) {
			s->held_ctrl_p = false;
			if (data[i] == KEY_CTRL_Q) {
				s->end = END_DETACHED;
				break;
			}
			out[n++] = KEY_CTRL_P;
		}
		if (data[i] == KEY_CTRL_P)
			s->held_ctrl_p = true;
		else
			out[n++] = data[i];
	}
	if (n && !ctl_ws_send(&s->ws, WS_BINARY, out, n) && s->end == END_NONE)
		s->end = END_DROPPED;
	free(out);
}

static void on_stdin(struct session *s)
{
	uint8_t buffer[INPUT_CHUNK];
	ssize_t n = read(STDIN_FILENO, buffer, sizeof buffer);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		s->stdin_open = false;
		if (!send_close_stdin(s))
			s->end = END_DROPPED;
		return;
	}
	if (s->raw)
		send_typed(s, buffer, (size_t)n);
	else if (!ctl_ws_send(&s->ws, WS_BINARY, buffer, (size_t)n))
		s->end = END_DROPPED;
}

static void on_signal(struct session *s)
{
	struct signalfd_siginfo info;
	if (read(s->signal_fd, &info, sizeof info) != sizeof info)
		return;
	if (info.ssi_signo == SIGWINCH) {
		if (s->raw && !send_resize(s))
			s->end = END_DROPPED;
		return;
	}
	s->signal = (int)info.ssi_signo;
	s->end = END_SIGNAL;
}

/* ---- the session ---- */

/* The signals the loop takes as events: a window's change, and the ones
 * that end boxctl, which must first put the terminal back. */
static int open_signal_fd(sigset_t *old)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGWINCH);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGQUIT);
	sigprocmask(SIG_BLOCK, &set, old);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

static void run_loop(struct session *s)
{
	drain_frames(s); /* what came with the handshake's answer */
	while (s->end == END_NONE) {
		struct pollfd fds[3] = {
			{.fd = s->ws.fd, .events = POLLIN},
			{.fd = s->signal_fd, .events = POLLIN},
			{.fd = s->stdin_open ? STDIN_FILENO : -1, .events = POLLIN},
		};
		if (poll(fds, 3, -1) < 0) {
			if (errno != EINTR)
				s->end = END_FAILED;
			continue;
		}
		if (fds[1].revents)
			on_signal(s);
		if (s->end == END_NONE && fds[0].revents)
			on_socket(s);
		if (s->end == END_NONE && fds[2].revents)
			on_stdin(s);
	}
}

/* How boxctl ends, said after the terminal is itself again. */
static int finish(struct session *s)
{
	ctl_tty_restore();
	if (s->end == END_DETACHED) {
		ctl_ws_send_close(&s->ws, WS_CLOSE_NORMAL);
		fprintf(stderr, "\nboxctl: detached; the command still runs: boxctl attach %s\n",
			s->id);
		return CTL_OK;
	}
	if (s->exit_code >= 0)
		return s->exit_code;
	if (s->end == END_SIGNAL)
		ctl_ws_send_close(&s->ws, WS_CLOSE_GOING_AWAY);
	fprintf(stderr,
		"%sboxctl: the connection to boxd ended; the command still runs: boxctl attach "
		"%s\n",
		s->raw ? "\n" : "", s->id);
	return s->end == END_SIGNAL ? 128 + s->signal : CTL_API_ERROR;
}

/* One event of GET /v1/exec/{id}/output: output to stdout (text, or
 * base64 for bytes that are not UTF-8), the exit's status remembered. */
static void on_output_event(struct session *s, const cJSON *event)
{
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(event, "type"));
	const char *data = cJSON_GetStringValue(cJSON_GetObjectItem(event, "data"));
	const char *encoding = cJSON_GetStringValue(cJSON_GetObjectItem(event, "encoding"));
	if (type && !strcmp(type, "exit"))
		on_exit_event(s, event);
	else if (type && !strcmp(type, "lost"))
		notice(s, "%.0f bytes of output were no longer kept",
		       cJSON_GetNumberValue(cJSON_GetObjectItem(event, "bytes")));
	else if (data && encoding && !strcmp(encoding, "base64")) {
		size_t length = strlen(data), decoded_length;
		uint8_t *decoded = xmalloc(length);
		if (base64_decode(data, length, decoded, length, &decoded_length))
			io_write_all(STDOUT_FILENO, decoded, decoded_length);
		free(decoded);
	} else if (data)
		io_write_all(STDOUT_FILENO, (const uint8_t *)data, strlen(data));
}

/* An ended command as attaching would have shown it: its whole output
 * (GET /v1/exec/{id}/output) and its status. */
static int show_ended(struct ctl *ctl, const char *id)
{
	char *encoded = ctl_url_encode(id);
	char *path = xasprintf("/v1/exec/%s/output?offset=0", encoded);
	free(encoded);
	struct client_response response;
	int status = ctl_call_raw(ctl, "GET", path, NULL, NULL, 0, NULL, &response);
	free(path);
	if (status != CTL_OK)
		return status;
	if (response.status != 200) {
		ctl_print_api_error(&response);
		client_response_free(&response);
		return CTL_API_ERROR;
	}
	struct session s = {.id = id, .exit_code = -1};
	for (char *line = response.body, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		cJSON *event = cJSON_Parse(line);
		on_output_event(&s, event);
		cJSON_Delete(event);
	}
	client_response_free(&response);
	return s.exit_code >= 0 ? s.exit_code : CTL_API_ERROR;
}

/* boxd refused the session. A command that has already ended (a short
 * one may, before boxctl attaches to what it started) is shown as it
 * would have been: its output and its status. */
static int refused(struct ctl *ctl, const char *id, struct client_response *response,
		   bool quiet_if_ended)
{
	int status = CTL_API_ERROR;
	if (response->status == 409) {
		if (!quiet_if_ended)
			fprintf(stderr, "boxctl: %s has ended; its output follows\n", id);
		status = show_ended(ctl, id);
	} else if (response->status)
		ctl_print_api_error(response);
	client_response_free(response);
	return status;
}

/* Attaches to command `id` on ctl's connection (upgraded in place) and
 * runs the session to its end; returns boxctl's exit status. */
static int attach(struct ctl *ctl, const char *id, bool started_here)
{
	struct client *client = ctl_client(ctl);
	if (!client)
		return CTL_API_ERROR;
	char *encoded = ctl_url_encode(id);
	char *path = xasprintf("/v1/exec/%s/attach", encoded);
	free(encoded);
	struct session s = {.id = id, .exit_code = -1, .stdin_open = true};
	struct client_response refusal;
	int status = ctl_ws_open(&s.ws, client, path, &refusal);
	free(path);
	if (status != CTL_OK)
		return refused(ctl, id, &refusal, started_here);
	sigset_t old_mask;
	s.signal_fd = open_signal_fd(&old_mask);
	signal(SIGPIPE, SIG_IGN);
	s.raw = isatty(STDIN_FILENO) && ctl_tty_raw(STDIN_FILENO);
	/* What boxctl started has this terminal's size already; a command
	 * attached to may not. */
	if (s.raw && !started_here && !send_resize(&s))
		s.end = END_DROPPED;
	run_loop(&s);
	status = finish(&s);
	ctl_ws_free(&s.ws);
	close(s.signal_fd);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	return status;
}

static int run_attach(struct ctl *ctl, int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-')
		return ctl_usage_error("attach", "usage: boxctl attach ID");
	return attach(ctl, argv[1], false);
}

/* ---- boxctl shell ---- */

#define SHELL_USAGE "usage: boxctl shell [--user U] [--cwd D] [-e NAME=VALUE]... [CMD...]"

static bool add_env(cJSON *body, const char *assignment)
{
	const char *equals = strchr(assignment, '=');
	if (!equals || equals == assignment)
		return false;
	cJSON *env = cJSON_GetObjectItem(body, "env");
	if (!env)
		env = cJSON_AddObjectToObject(body, "env");
	char *name = xstrndup(assignment, (size_t)(equals - assignment));
	cJSON_DeleteItemFromObject(env, name);
	cJSON_AddStringToObject(env, name, equals + 1);
	free(name);
	return true;
}

/* The command's words joined by spaces (bash reads them as one line, as
 * boxctl exec's), or an interactive bash. */
static char *join_command(int argc, char **argv, int first)
{
	if (first >= argc)
		return xstrdup("bash -i");
	size_t length = 1;
	for (int i = first; i < argc; i++)
		length += strlen(argv[i]) + 1;
	char *cmd = xcalloc(1, length);
	for (int i = first; i < argc; i++) {
		if (i > first)
			strcat(cmd, " ");
		strcat(cmd, argv[i]);
	}
	return cmd;
}

/* POST /v1/exec's body for the shell, or NULL after a usage error. */
static cJSON *shell_body(int argc, char **argv, int *usage)
{
	cJSON *body = cJSON_CreateObject();
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(arg, "--")) {
			i++;
			break;
		}
		if (!value || (strcmp(arg, "--user") && strcmp(arg, "--cwd") && strcmp(arg, "-e") &&
			       strcmp(arg, "--env"))) {
			*usage = ctl_usage_error("shell", "unexpected `%s` (" SHELL_USAGE ")", arg);
			cJSON_Delete(body);
			return NULL;
		}
		i++;
		if (!strcmp(arg, "--user"))
			cJSON_AddStringToObject(body, "user", value);
		else if (!strcmp(arg, "--cwd"))
			cJSON_AddStringToObject(body, "cwd", value);
		else if (!add_env(body, value)) {
			*usage = ctl_usage_error("shell", "`%s` is not NAME=VALUE", value);
			cJSON_Delete(body);
			return NULL;
		}
	}
	char *cmd = join_command(argc, argv, i);
	cJSON_AddStringToObject(body, "cmd", cmd);
	free(cmd);
	cJSON_AddTrueToObject(body, "background");
	cJSON_AddNumberToObject(body, "timeoutSec", SHELL_TIMEOUT_SEC);
	int cols, rows;
	ctl_tty_size(STDIN_FILENO, &cols, &rows);
	cJSON *pty = cJSON_AddObjectToObject(body, "pty");
	cJSON_AddNumberToObject(pty, "cols", cols);
	cJSON_AddNumberToObject(pty, "rows", rows);
	return body;
}

static int run_shell(struct ctl *ctl, int argc, char **argv)
{
	int usage = CTL_USAGE;
	cJSON *body = shell_body(argc, argv, &usage);
	if (!body)
		return usage;
	if (!isatty(STDIN_FILENO)) {
		cJSON_Delete(body);
		return ctl_usage_error("shell",
				       "stdin is not a terminal; to run a command without one use "
				       "boxctl exec -- CMD");
	}
	cJSON *answer;
	int status = ctl_call(ctl, "POST", "/v1/exec", body, &answer);
	cJSON_Delete(body);
	if (status != CTL_OK)
		return status;
	const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(answer, "bgId"));
	if (!id) {
		fprintf(stderr, "boxctl: boxd started the command without saying its id\n");
		cJSON_Delete(answer);
		return CTL_API_ERROR;
	}
	status = attach(ctl, id, true);
	cJSON_Delete(answer);
	return status;
}

const struct ctl_command ctl_terminal_commands[] = {
	{"shell",
	 "  shell [--user U] [--cwd D] [-e NAME=VALUE]... [CMD...]\n"
	 "                              an interactive terminal in the box (default CMD:\n"
	 "                              bash -i); exits with its status; Ctrl-P Ctrl-Q\n"
	 "                              detaches",
	 run_shell},
	{"attach",
	 "  attach ID                   a running command's terminal, its recent output\n"
	 "                              first; stdin not a terminal: piped in, its end\n"
	 "                              closes the command's stdin",
	 run_attach},
	{0},
};
