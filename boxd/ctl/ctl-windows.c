/* ctl-windows.c: boxctl windows (the display's top-level windows) and
 * boxctl windows focus ID. */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

static const char *text_or(const cJSON *object, const char *name, const char *otherwise)
{
	const cJSON *item = cJSON_GetObjectItem(object, name);
	return cJSON_IsString(item) ? item->valuestring : otherwise;
}

static int number_of(const cJSON *object, const char *name)
{
	return (int)cJSON_GetNumberValue(cJSON_GetObjectItem(object, name));
}

/* A title or class on one line: control characters (a tab, a newline a
 * program put in its title) print as spaces. */
static void print_field(const char *text, int width)
{
	int printed = 0;
	for (const unsigned char *c = (const unsigned char *)text; *c; c++, printed++)
		putchar(*c < 0x20 || *c == 0x7f ? ' ' : *c);
	for (; printed < width; printed++)
		putchar(' ');
}

/* ID  PID  GEOMETRY  F  CLASS  TITLE; F is * for the focused window, m for
 * one not shown (minimised), - otherwise. */
static void print_window(const cJSON *window)
{
	const cJSON *pid = cJSON_GetObjectItem(window, "pid");
	char pid_text[16] = "-", geometry[64];
	if (cJSON_IsNumber(pid))
		snprintf(pid_text, sizeof pid_text, "%.0f", pid->valuedouble);
	snprintf(geometry, sizeof geometry, "%dx%d+%d+%d", number_of(window, "width"),
		 number_of(window, "height"), number_of(window, "x"), number_of(window, "y"));
	const char *mark = cJSON_IsTrue(cJSON_GetObjectItem(window, "focused"))    ? "*"
			   : !cJSON_IsTrue(cJSON_GetObjectItem(window, "visible")) ? "m"
										   : "-";
	printf("%-10s %-8s %-20s %s ", text_or(window, "id", "?"), pid_text, geometry, mark);
	print_field(text_or(window, "class", ""), 16);
	putchar(' ');
	print_field(text_or(window, "title", ""), 0);
	putchar('\n');
}

static void print_header(void)
{
	printf("%-10s %-8s %-20s %s %-16s %s\n", "ID", "PID", "GEOMETRY", "F", "CLASS", "TITLE");
}

static int run_focus(struct ctl *ctl, int argc, char **argv)
{
	if (argc != 3)
		return ctl_usage_error("windows", "usage: boxctl windows focus ID");
	const char *id = argv[2];
	if (!id[0] || id[strspn(id, "0123456789abcdefABCDEFxX")] != '\0')
		return ctl_usage_error(
			"windows", "a window id is 0x and hex digits, or decimal, not \"%s\"", id);
	char path[96];
	snprintf(path, sizeof path, "/v1/screen/windows/%.40s/focus", id);
	cJSON *answer = NULL;
	int status = ctl_call(ctl, "POST", path, NULL, &answer);
	if (status != CTL_OK)
		return status;
	if (!ctl_print_json(ctl, answer)) {
		print_header();
		print_window(answer);
	}
	cJSON_Delete(answer);
	return CTL_OK;
}

static int run_windows(struct ctl *ctl, int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "focus") == 0)
		return run_focus(ctl, argc, argv);
	if (argc > 1)
		return ctl_usage_error("windows",
				       "unexpected `%s` (usage: boxctl windows [--json] | windows "
				       "focus ID)",
				       argv[1]);
	cJSON *answer = NULL;
	int status = ctl_call(ctl, "GET", "/v1/screen/windows", NULL, &answer);
	if (status != CTL_OK)
		return status;
	if (!ctl_print_json(ctl, answer)) {
		print_header();
		const cJSON *window;
		cJSON_ArrayForEach(window, cJSON_GetObjectItem(answer, "windows"))
			print_window(window);
	}
	cJSON_Delete(answer);
	return CTL_OK;
}

const struct ctl_command ctl_windows_commands[] = {
	{"windows",
	 "  windows                     the display's top-level windows, top-most last:\n"
	 "                              id, pid, geometry, * focused, class, title\n"
	 "  windows focus ID            raise a window and give it the keyboard",
	 run_windows},
	{0},
};
