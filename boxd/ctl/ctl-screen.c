/* ctl-screen.c: boxctl shot, input, record. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "xalloc.h"

/* ---- shot ---- */

static int write_image(const char *path, const struct client_response *response)
{
	FILE *out = strcmp(path, "-") == 0 ? stdout : fopen(path, "wb");
	if (!out) {
		fprintf(stderr, "boxctl shot: cannot write %s: %s\n", path, strerror(errno));
		return CTL_API_ERROR;
	}
	bool ok = fwrite(response->body, 1, response->body_length, out) == response->body_length;
	ok = (out == stdout ? fflush(out) == 0 : fclose(out) == 0) && ok;
	if (!ok) {
		fprintf(stderr, "boxctl shot: cannot write %s: %s\n", path, strerror(errno));
		return CTL_API_ERROR;
	}
	return CTL_OK;
}

static int run_shot(struct ctl *ctl, int argc, char **argv)
{
	static const struct option options[] = {
		{"output", required_argument, NULL, 'o'},
		{"scale", required_argument, NULL, 's'},
		{"jpeg", no_argument, NULL, 'j'},
		{"quality", required_argument, NULL, 'q'},
		{"region", required_argument, NULL, 'r'},
		{"no-cursor", no_argument, NULL, 'n'},
		{0},
	};
	const char *output = NULL, *scale = NULL, *quality = NULL, *region = NULL;
	bool jpeg = false, cursor = true;
	int option;
	optind = 1;
	while ((option = getopt_long(argc, argv, "o:", options, NULL)) != -1) {
		switch (option) {
		case 'o': output = optarg; break;
		case 's': scale = optarg; break;
		case 'j': jpeg = true; break;
		case 'q':
			quality = optarg;
			jpeg = true;
			break;
		case 'r': region = optarg; break;
		case 'n': cursor = false; break;
		default: return ctl_usage_error("shot", "see boxctl --help");
		}
	}
	if (optind < argc)
		return ctl_usage_error("shot", "unexpected argument \"%s\"", argv[optind]);
	long x, y, w, h;
	if (region && sscanf(region, "%ld,%ld,%ld,%ld", &x, &y, &w, &h) != 4)
		return ctl_usage_error("shot", "--region takes X,Y,W,H");
	char path[512];
	int n = snprintf(path, sizeof path, "/v1/screen/shot?format=%s&cursor=%d",
			 jpeg ? "jpeg" : "png", cursor);
	const char *names[2] = {"scale", "quality"}, *values[2] = {scale, quality};
	for (int i = 0; i < 2; i++) {
		if (!values[i])
			continue;
		char *encoded = ctl_url_encode(values[i]);
		n += snprintf(path + n, sizeof path - (size_t)n, "&%s=%.40s", names[i], encoded);
		free(encoded);
	}
	if (region)
		snprintf(path + n, sizeof path - (size_t)n, "&x=%ld&y=%ld&w=%ld&h=%ld", x, y, w, h);
	struct client_response response;
	int status = ctl_call_raw(ctl, "GET", path, NULL, NULL, 0, NULL, &response);
	if (status != CTL_OK)
		return status;
	if (response.status != 200) {
		cJSON *json = cJSON_ParseWithLength(response.body, response.body_length);
		const char *message = cJSON_GetStringValue(
			cJSON_GetObjectItem(cJSON_GetObjectItem(json, "error"), "message"));
		fprintf(stderr, "boxctl: %s\n", message ? message : "boxd refused the screenshot");
		cJSON_Delete(json);
		client_response_free(&response);
		return CTL_API_ERROR;
	}
	const char *file = output ? output : jpeg ? "shot.jpg" : "shot.png";
	status = write_image(file, &response);
	if (status == CTL_OK && strcmp(file, "-") != 0)
		fprintf(stderr, "%s: %sx%s, %zu KiB\n", file,
			client_response_header(&response, "X-Width"),
			client_response_header(&response, "X-Height"),
			(response.body_length + 1023) / 1024);
	client_response_free(&response);
	return status;
}

/* ---- input ---- */

static bool parse_int(const char *text, long *value)
{
	char *end;
	errno = 0;
	*value = strtol(text, &end, 10);
	return text[0] && !*end && errno == 0;
}

static bool is_button(const char *word)
{
	return strcmp(word, "left") == 0 || strcmp(word, "middle") == 0 ||
	       strcmp(word, "right") == 0 || strcmp(word, "back") == 0 ||
	       strcmp(word, "forward") == 0;
}

/* Takes the numbers an action needs from argv; false when they are missing. */
static bool take_ints(int argc, char **argv, int *at, int count, long *values)
{
	for (int i = 0; i < count; i++)
		if (*at + 1 >= argc || !parse_int(argv[*at + 1], &values[i]))
			return false;
		else
			(*at)++;
	return true;
}

/* One action from argv[*at...]; advances *at past its words. */
static cJSON *parse_action(int argc, char **argv, int *at, char *error, size_t error_size)
{
	const char *word = argv[*at];
	cJSON *action = cJSON_CreateObject();
	cJSON_AddStringToObject(action, "type", word);
	long v[4];
	bool ok = true;
	if (strcmp(word, "move") == 0) {
		ok = take_ints(argc, argv, at, 2, v);
		if (ok) {
			cJSON_AddNumberToObject(action, "x", (double)v[0]);
			cJSON_AddNumberToObject(action, "y", (double)v[1]);
		}
	} else if (strcmp(word, "click") == 0 || strcmp(word, "down") == 0 ||
		   strcmp(word, "up") == 0) {
		if (*at + 1 < argc && is_button(argv[*at + 1]))
			cJSON_AddStringToObject(action, "button", argv[++*at]);
		if (word[0] == 'c' && *at + 1 < argc && parse_int(argv[*at + 1], &v[0])) {
			cJSON_AddNumberToObject(action, "count", (double)v[0]);
			(*at)++;
		}
	} else if (strcmp(word, "scroll") == 0) {
		ok = take_ints(argc, argv, at, 1, v);
		if (ok) {
			cJSON_AddNumberToObject(action, "dy", (double)v[0]);
			if (*at + 1 < argc && parse_int(argv[*at + 1], &v[1])) {
				cJSON_AddNumberToObject(action, "dx", (double)v[1]);
				(*at)++;
			}
		}
	} else if (strcmp(word, "drag") == 0) {
		ok = take_ints(argc, argv, at, 4, v);
		if (ok) {
			cJSON_AddItemToObject(
				action, "from",
				cJSON_CreateIntArray((int[]){(int)v[0], (int)v[1]}, 2));
			cJSON_AddItemToObject(
				action, "to",
				cJSON_CreateIntArray((int[]){(int)v[2], (int)v[3]}, 2));
		}
	} else if (strcmp(word, "type") == 0 || strcmp(word, "key") == 0) {
		ok = *at + 1 < argc;
		if (ok)
			cJSON_AddStringToObject(action, word[0] == 't' ? "text" : "keys",
						argv[++*at]);
	} else if (strcmp(word, "wait") == 0) {
		ok = take_ints(argc, argv, at, 1, v);
		if (ok)
			cJSON_AddNumberToObject(action, "ms", (double)v[0]);
	} else {
		snprintf(error, error_size,
			 "unknown action \"%s\" (move, click, down, up, scroll, drag, type, key, "
			 "wait)",
			 word);
		cJSON_Delete(action);
		return NULL;
	}
	if (!ok) {
		snprintf(error, error_size, "\"%s\" is missing its arguments", word);
		cJSON_Delete(action);
		return NULL;
	}
	(*at)++;
	return action;
}

static int run_input(struct ctl *ctl, int argc, char **argv)
{
	if (argc < 2)
		return ctl_usage_error(
			"input", "give actions, e.g. move 10 20 click type \"hello\" key ctrl+l");
	cJSON *body = cJSON_CreateObject();
	cJSON *actions = cJSON_AddArrayToObject(body, "actions");
	for (int at = 1; at < argc;) {
		char error[200];
		cJSON *action = parse_action(argc, argv, &at, error, sizeof error);
		if (!action) {
			cJSON_Delete(body);
			return ctl_usage_error("input", "%s", error);
		}
		cJSON_AddItemToArray(actions, action);
	}
	cJSON *answer;
	int status = ctl_call(ctl, "POST", "/v1/screen/input", body, &answer);
	cJSON_Delete(body);
	if (status != CTL_OK)
		return status;
	if (!ctl_print_json(ctl, answer))
		printf("done: %d actions\n",
		       (int)cJSON_GetNumberValue(cJSON_GetObjectItem(answer, "done")));
	cJSON_Delete(answer);
	return CTL_OK;
}

/* ---- record ---- */

static void print_recording(const cJSON *answer)
{
	const char *path = cJSON_GetStringValue(cJSON_GetObjectItem(answer, "path"));
	double duration = cJSON_GetNumberValue(cJSON_GetObjectItem(answer, "durationMs"));
	double frames = cJSON_GetNumberValue(cJSON_GetObjectItem(answer, "frames"));
	double bytes = cJSON_GetNumberValue(cJSON_GetObjectItem(answer, "bytes"));
	printf("%s: %.1f s, %.0f frames, %.0f KiB\n", path ? path : "?",
	       duration == duration ? duration / 1000 : 0, frames == frames ? frames : 0,
	       bytes == bytes ? bytes / 1024 : 0);
}

static int run_record(struct ctl *ctl, int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "status";
	cJSON *answer = NULL;
	int status;
	if (strcmp(what, "start") == 0) {
		cJSON *body = cJSON_CreateObject();
		/* Options come in pairs: a name, then its value. */
		for (int i = 2; i < argc; i += 2) {
			long value;
			bool fps = strcmp(argv[i], "--fps") == 0,
			     max = strcmp(argv[i], "--max-sec") == 0;
			if ((!fps && !max) || i + 1 >= argc || !parse_int(argv[i + 1], &value)) {
				cJSON_Delete(body);
				return ctl_usage_error("record",
						       "start takes [--fps N] [--max-sec N]");
			}
			cJSON_AddNumberToObject(body, fps ? "fps" : "maxSec", (double)value);
		}
		status = ctl_call(ctl, "POST", "/v1/screen/record/start", body, &answer);
		cJSON_Delete(body);
		if (status == CTL_OK && !ctl_print_json(ctl, answer))
			printf("recording %s to %s\n",
			       cJSON_GetStringValue(cJSON_GetObjectItem(answer, "recordingId")),
			       cJSON_GetStringValue(cJSON_GetObjectItem(answer, "path")));
	} else if (strcmp(what, "stop") == 0 && argc == 2) {
		status = ctl_call(ctl, "POST", "/v1/screen/record/stop", NULL, &answer);
		if (status == CTL_OK && !ctl_print_json(ctl, answer))
			print_recording(answer);
	} else if (strcmp(what, "status") == 0 && argc <= 2) {
		status = ctl_call(ctl, "GET", "/v1/screen/record", NULL, &answer);
		if (status == CTL_OK && !ctl_print_json(ctl, answer)) {
			if (cJSON_IsTrue(cJSON_GetObjectItem(answer, "recording")))
				print_recording(answer);
			else
				printf("not recording\n");
		}
	} else {
		return ctl_usage_error(
			"record",
			"use record start [--fps N] [--max-sec N] | record stop | record status");
	}
	cJSON_Delete(answer);
	return status;
}

const struct ctl_command ctl_screen_commands[] = {
	{"shot",
	 "  shot [-o FILE|-] [--scale F] [--jpeg] [--quality N] [--region X,Y,W,H]\n"
	 "       [--no-cursor]\n"
	 "                              a screenshot (to shot.png; -o - for stdout)",
	 run_shot},
	{"input",
	 "  input ACTION...             mouse and keyboard, in order; ACTION is one of\n"
	 "                              move X Y | click [BUTTON] [N] | down|up [BUTTON]\n"
	 "                              | scroll DY [DX] | drag X1 Y1 X2 Y2 | type TEXT\n"
	 "                              | key COMBO | wait MS",
	 run_input},
	{"record",
	 "  record start [--fps N] [--max-sec N]\n"
	 "                              record the screen to an MP4 under WORK/.sbx\n"
	 "  record stop                 end it: path, length, frames, size\n"
	 "  record [status]             the recording in progress, if any",
	 run_record},
	{0},
};
