/* ctl-clipboard.c: boxctl clipboard: print what the clipboard (or PRIMARY)
 * holds, or put text or a PNG on it (GET/PUT /v1/screen/clipboard). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

static const unsigned char png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static int write_all(const char *path, const void *data, size_t length)
{
	bool to_stdout = strcmp(path, "-") == 0;
	FILE *out = to_stdout ? stdout : fopen(path, "wb");
	if (!out) {
		fprintf(stderr, "boxctl clipboard: cannot write %s: %s\n", path, strerror(errno));
		return CTL_API_ERROR;
	}
	bool ok = fwrite(data, 1, length, out) == length;
	ok = (to_stdout ? fflush(out) == 0 : fclose(out) == 0) && ok;
	if (!ok) {
		fprintf(stderr, "boxctl clipboard: cannot write %s: %s\n", path, strerror(errno));
		return CTL_API_ERROR;
	}
	return CTL_OK;
}

/* A 204: nothing, or nothing boxctl can show. */
static int clipboard_print_nothing(const struct client_response *response, const char *selection)
{
	const char *what = client_response_header(response, "X-Clipboard");
	if (what && strcmp(what, "other") == 0) {
		const char *targets = client_response_header(response, "X-Clipboard-Targets");
		fprintf(stderr, "boxctl: the %s holds neither text nor a PNG (it offers %s)\n",
			selection, targets ? targets : "nothing named");
		return CTL_API_ERROR;
	}
	fprintf(stderr, "boxctl: the %s is empty\n", selection);
	return CTL_OK;
}

static int clipboard_show(const struct client_response *response, const char *output,
			  const char *selection)
{
	if (response->status == 204)
		return clipboard_print_nothing(response, selection);
	const char *type = client_response_header(response, "Content-Type");
	bool image = type && strncmp(type, "image/", 6) == 0;
	if (output)
		return write_all(output, response->body, response->body_length);
	if (image && isatty(STDOUT_FILENO)) {
		fprintf(stderr,
			"boxctl: the %s holds a PNG (%zu KiB); write it with -o FILE, or pipe it\n",
			selection, (response->body_length + 1023) / 1024);
		return CTL_API_ERROR;
	}
	int status = write_all("-", response->body, response->body_length);
	/* A terminal's prompt does not start on the text's last line. */
	if (status == CTL_OK && !image && isatty(STDOUT_FILENO) && response->body_length &&
	    response->body[response->body_length - 1] != '\n')
		putchar('\n');
	return status;
}

static int clipboard_get(struct ctl *ctl, const char *selection, const char *output)
{
	char path[80];
	snprintf(path, sizeof path, "/v1/screen/clipboard?selection=%s", selection);
	struct client_response response;
	int status = ctl_call_raw(ctl, "GET", path, NULL, NULL, 0, NULL, &response);
	if (status != CTL_OK)
		return status;
	if (response.status != 200 && response.status != 204) {
		ctl_print_api_error(&response);
		status = CTL_API_ERROR;
	} else {
		status = clipboard_show(&response, output, selection);
	}
	client_response_free(&response);
	return status;
}

/* The value to set: the argument, a file's bytes, or standard input's. */
static char *clipboard_value(const char *text, const char *file, size_t *length)
{
	if (text && strcmp(text, "-") != 0) {
		*length = strlen(text);
		return strdup(text);
	}
	int fd = file ? open(file, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	if (fd < 0) {
		fprintf(stderr, "boxctl clipboard: cannot read %s: %s\n", file, strerror(errno));
		return NULL;
	}
	char *data = ctl_read_all(fd, length);
	if (!data)
		fprintf(stderr, "boxctl clipboard: cannot read %s: %s\n", file ? file : "stdin",
			strerror(errno));
	if (file)
		close(fd);
	return data;
}

static int clipboard_set(struct ctl *ctl, const char *selection, const char *text, const char *file)
{
	size_t length;
	char *data = clipboard_value(text, file, &length);
	if (!data)
		return CTL_API_ERROR;
	bool png = length >= sizeof png_signature &&
		   memcmp(data, png_signature, sizeof png_signature) == 0;
	char path[80];
	snprintf(path, sizeof path, "/v1/screen/clipboard?selection=%s", selection);
	cJSON *answer = NULL;
	int status =
		ctl_call_body(ctl, "PUT", path, png ? "image/png" : "text/plain; charset=utf-8",
			      data, length, &answer);
	free(data);
	if (status == CTL_OK && !ctl_print_json(ctl, answer))
		printf("the %s holds %s, %zu bytes\n", selection, png ? "a PNG" : "text", length);
	cJSON_Delete(answer);
	return status;
}

static int run_clipboard(struct ctl *ctl, int argc, char **argv)
{
	static const struct option options[] = {
		{"primary", no_argument, NULL, 'p'},
		{"output", required_argument, NULL, 'o'},
		{"file", required_argument, NULL, 'f'},
		{0},
	};
	const char *output = NULL, *file = NULL, *selection = "clipboard";
	int option;
	/* 0, not 1: glibc starts afresh, permuting, so options may follow the
	 * action's word ("set --primary -"); a lone "-" is an argument. */
	optind = 0;
	while ((option = getopt_long(argc, argv, "o:f:", options, NULL)) != -1) {
		switch (option) {
		case 'p': selection = "primary"; break;
		case 'o': output = optarg; break;
		case 'f': file = optarg; break;
		default: return ctl_usage_error("clipboard", "see boxctl --help");
		}
	}
	const char *action = optind < argc ? argv[optind++] : "get";
	if (strcmp(action, "get") == 0) {
		if (file || optind < argc)
			return ctl_usage_error("clipboard", "get takes [--primary] [-o FILE] only");
		return clipboard_get(ctl, selection, output);
	}
	if (strcmp(action, "set") != 0)
		return ctl_usage_error("clipboard", "unknown action \"%s\" (get, set)", action);
	const char *text = optind < argc ? argv[optind++] : NULL;
	if (output || optind < argc || (text && file) || (!text && !file))
		return ctl_usage_error("clipboard", "set takes TEXT, --file FILE or - (stdin)");
	return clipboard_set(ctl, selection, text, file);
}

const struct ctl_command ctl_clipboard_commands[] = {
	{"clipboard",
	 "  clipboard [get] [--primary] [-o FILE]\n"
	 "                              print the clipboard's text (a PNG goes to -o FILE\n"
	 "                              or a pipe); --primary: the PRIMARY selection\n"
	 "  clipboard set [--primary] TEXT | --file FILE | -\n"
	 "                              put text, or a PNG (told by its signature), on it",
	 run_clipboard},
	{0},
};
