#include "text.h"
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xalloc.h"

enum option_id {
	OPT_CONFIG = 1000,
	OPT_WORK_DIR,
	OPT_RUN_DIR,
	OPT_SOCKET,
	OPT_VSOCK_PORT,
	OPT_VSOCK_ALLOW_CID,
	OPT_DISPLAY,
	OPT_USER,
	OPT_REPORT,
	OPT_REPORT_INTERVAL,
	OPT_CGROUP,
	OPT_COMMANDS_CGROUP,
	OPT_DEV,
	OPT_IDLE_TIMEOUT,
	OPT_LOG_LEVEL,
	OPT_HOSTS_FILE,
	OPT_SCREEN_IDLE,
	OPT_INGRESS_BASE,
	OPT_FREEZE_LIMIT,
	OPT_LOG_CAP,
	OPT_CHANGES_KEEP,
	OPT_CHANGES_KEEP_SEC,
	OPT_HELP,
	OPT_VERSION,
};

static const struct option long_options[] = {
	{"config", required_argument, NULL, OPT_CONFIG},
	{"work-dir", required_argument, NULL, OPT_WORK_DIR},
	{"run-dir", required_argument, NULL, OPT_RUN_DIR},
	{"socket", required_argument, NULL, OPT_SOCKET},
	{"vsock-port", required_argument, NULL, OPT_VSOCK_PORT},
	{"vsock-allow-cid", required_argument, NULL, OPT_VSOCK_ALLOW_CID},
	{"display", required_argument, NULL, OPT_DISPLAY},
	{"user", required_argument, NULL, OPT_USER},
	{"report", required_argument, NULL, OPT_REPORT},
	{"report-interval", required_argument, NULL, OPT_REPORT_INTERVAL},
	{"cgroup", required_argument, NULL, OPT_CGROUP},
	{"commands-cgroup", required_argument, NULL, OPT_COMMANDS_CGROUP},
	{"dev", no_argument, NULL, OPT_DEV},
	{"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
	{"log-level", required_argument, NULL, OPT_LOG_LEVEL},
	{"hosts-file", required_argument, NULL, OPT_HOSTS_FILE},
	{"screen-idle", required_argument, NULL, OPT_SCREEN_IDLE},
	{"ingress-base", required_argument, NULL, OPT_INGRESS_BASE},
	{"freeze-limit", required_argument, NULL, OPT_FREEZE_LIMIT},
	{"log-cap", required_argument, NULL, OPT_LOG_CAP},
	{"changes-keep", required_argument, NULL, OPT_CHANGES_KEEP},
	{"changes-keep-sec", required_argument, NULL, OPT_CHANGES_KEEP_SEC},
	{"help", no_argument, NULL, OPT_HELP},
	{"version", no_argument, NULL, OPT_VERSION},
	{NULL, 0, NULL, 0},
};

void config_usage(const char *program)
{
	printf("usage: %s [--config FILE] [--work-dir DIR] [--run-dir DIR] [--socket PATH]\n"
	       "       [--vsock-port N|off] [--vsock-allow-cid N] [--display :N] [--user NAME]\n"
	       "       [--report ADDR] [--report-interval S] [--cgroup auto|off] [--dev]\n"
	       "       [--commands-cgroup /PATH] [--idle-timeout S]\n"
	       "       [--log-level error|warning|notice|info|debug] [--hosts-file PATH]\n"
	       "       [--screen-idle S] [--ingress-base N|off] [--freeze-limit S]\n"
	       "       [--log-cap BYTES] [--changes-keep N] [--changes-keep-sec S]\n"
	       "\n"
	       "boxd serves the box's HTTP API on a unix socket and on vsock.\n"
	       "--dev keeps everything under ./.boxd-dev with vsock off, for trying it out.\n"
	       "A config file holds `name = value` lines named like the long flags.\n",
	       program);
}

static bool parse_int(const char *text, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long value = strtol(text, &end, 10);
	if (errno || end == text || *end || value < min || value > max)
		return false;
	*out = value;
	return true;
}

static void set_string(char **slot, const char *value)
{
	free(*slot);
	*slot = xstrdup(value);
}

static bool parse_log_level(const char *text, enum log_level *level)
{
	static const struct {
		const char *name;
		enum log_level level;
	} names[] = {
		{"error", LOG_LEVEL_ERROR},   {"warning", LOG_LEVEL_WARNING},
		{"notice", LOG_LEVEL_NOTICE}, {"info", LOG_LEVEL_INFO},
		{"debug", LOG_LEVEL_DEBUG},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcmp(text, names[i].name) == 0) {
			*level = names[i].level;
			return true;
		}
	}
	return false;
}

/* Applies one setting, from a flag or a config file line. */
static bool apply(struct boxd_config *config, int id, const char *value, char *error, size_t size)
{
	long number;
	switch (id) {
	case OPT_WORK_DIR: set_string(&config->work_dir, value); return true;
	case OPT_RUN_DIR: set_string(&config->run_dir, value); return true;
	case OPT_SOCKET: set_string(&config->socket_path, value); return true;
	case OPT_DISPLAY: set_string(&config->display, value); return true;
	case OPT_HOSTS_FILE: set_string(&config->hosts_file, value); return true;
	case OPT_USER: set_string(&config->user, value); return true;
	case OPT_VSOCK_PORT:
		if (strcmp(value, "off") == 0) {
			config->vsock_port = -1;
			return true;
		}
		if (!parse_int(value, 1, INT_MAX, &number))
			return text_fail(error, size,
					 "--vsock-port takes a port number or `off`, not `%s`",
					 value);
		config->vsock_port = (int)number;
		return true;
	case OPT_INGRESS_BASE:
		if (strcmp(value, "off") == 0) {
			config->ingress_base = -1;
			return true;
		}
		/* Room above it for every port: base + 65535 is a vsock port. */
		if (!parse_int(value, 1, 0xFFFFFFFFL - 65535, &number))
			return text_fail(
				error, size,
				"--ingress-base takes a vsock port number or `off`, not `%s`",
				value);
		config->ingress_base = number;
		return true;
	case OPT_FREEZE_LIMIT:
		if (!parse_int(value, 1, 86400, &number))
			return text_fail(error, size,
					 "--freeze-limit takes seconds from 1 to 86400, not `%s`",
					 value);
		config->freeze_limit_sec = (int)number;
		return true;
	case OPT_VSOCK_ALLOW_CID:
		if (!parse_int(value, 0, 0xFFFFFFFEL, &number))
			return text_fail(error, size,
					 "--vsock-allow-cid takes a CID number, not `%s`", value);
		if (config->allowed_cid_count >= CONFIG_MAX_ALLOWED_CIDS)
			return text_fail(error, size, "--vsock-allow-cid given more than %d times",
					 CONFIG_MAX_ALLOWED_CIDS - 1);
		config->allowed_cids[config->allowed_cid_count++] = (unsigned)number;
		return true;
	case OPT_REPORT:
		if (strcmp(value, "off") == 0) {
			free(config->report);
			config->report = NULL;
			return true;
		}
		if (strncmp(value, "vsock:", 6) != 0 && strncmp(value, "unix:", 5) != 0)
			return text_fail(
				error, size,
				"--report takes vsock:CID:PORT, unix:PATH or off, not `%s`", value);
		set_string(&config->report, value);
		return true;
	case OPT_REPORT_INTERVAL:
		if (!parse_int(value, 1, 86400, &number))
			return text_fail(
				error, size,
				"--report-interval takes seconds from 1 to 86400, not `%s`", value);
		config->report_interval_sec = (int)number;
		return true;
	case OPT_SCREEN_IDLE:
		if (!parse_int(value, 0, 86400, &number))
			return text_fail(
				error, size,
				"--screen-idle takes seconds from 0 (never) to 86400, not `%s`",
				value);
		config->screen_idle_sec = (int)number;
		return true;
	case OPT_LOG_CAP:
		/* Below 16 KiB the shim would rotate at nearly every write; past
		 * 1 TiB is a typo. */
		if (!parse_int(value, 16384, 1L << 40, &number))
			return text_fail(
				error, size,
				"--log-cap takes bytes from 16384 to 1099511627776, not `%s`",
				value);
		config->log_cap_bytes = (unsigned long long)number;
		return true;
	case OPT_CHANGES_KEEP:
		/* The journal keeps at least this many changes (docs/changes.md). */
		if (!parse_int(value, 10, 10000000, &number))
			return text_fail(
				error, size,
				"--changes-keep takes a count from 10 to 10000000, not `%s`",
				value);
		config->changes_keep = (size_t)number;
		return true;
	case OPT_CHANGES_KEEP_SEC:
		if (!parse_int(value, 0, 7 * 86400, &number))
			return text_fail(
				error, size,
				"--changes-keep-sec takes seconds from 0 to 604800, not `%s`",
				value);
		config->changes_keep_sec = (int)number;
		return true;
	case OPT_IDLE_TIMEOUT:
		if (!parse_int(value, 1, 86400, &number))
			return text_fail(error, size,
					 "--idle-timeout takes seconds from 1 to 86400, not `%s`",
					 value);
		config->idle_timeout_sec = (int)number;
		return true;
	case OPT_CGROUP:
		if (strcmp(value, "auto") == 0)
			config->cgroup = CGROUP_MODE_AUTO;
		else if (strcmp(value, "off") == 0)
			config->cgroup = CGROUP_MODE_OFF;
		else
			return text_fail(error, size, "--cgroup takes auto or off, not `%s`",
					 value);
		return true;
	case OPT_COMMANDS_CGROUP:
		if (value[0] != '/' || strstr(value, "/..") || strstr(value, "//"))
			return text_fail(error, size,
					 "--commands-cgroup takes a cgroup path such as "
					 "/system.slice/boxd-commands.service, not `%s`",
					 value);
		set_string(&config->commands_cgroup, value);
		return true;
	case OPT_DEV:
		if (strcmp(value, "true") != 0 && strcmp(value, "false") != 0)
			return text_fail(error, size, "dev takes true or false, not `%s`", value);
		config->dev = strcmp(value, "true") == 0;
		return true;
	case OPT_LOG_LEVEL:
		if (!parse_log_level(value, &config->log_level))
			return text_fail(
				error, size,
				"--log-level takes error, warning, notice, info or debug, not `%s`",
				value);
		return true;
	}
	return text_fail(error, size, "unknown setting");
}

static int option_by_name(const char *name)
{
	for (const struct option *option = long_options; option->name; option++) {
		if (strcmp(option->name, name) == 0 && option->val != OPT_CONFIG &&
		    option->val != OPT_HELP && option->val != OPT_VERSION)
			return option->val;
	}
	return 0;
}

static char *trim(char *text)
{
	while (*text == ' ' || *text == '\t')
		text++;
	size_t length = strlen(text);
	while (length && strchr(" \t\r\n", text[length - 1]))
		text[--length] = '\0';
	return text;
}

static bool load_file(struct boxd_config *config, const char *path, char *error, size_t size)
{
	FILE *file = fopen(path, "r");
	if (!file)
		return text_fail(error, size, "cannot read config file %s: %s", path,
				 strerror(errno));
	char line[4096];
	int number = 0;
	bool ok = true;
	while (ok && fgets(line, sizeof line, file)) {
		number++;
		char *text = trim(line);
		if (*text == '\0' || *text == '#')
			continue;
		char *equals = strchr(text, '=');
		if (!equals) {
			ok = text_fail(error, size, "%s:%d: expected `name = value`", path, number);
			break;
		}
		*equals = '\0';
		char *name = trim(text), *value = trim(equals + 1);
		int id = option_by_name(name);
		if (!id) {
			ok = text_fail(error, size, "%s:%d: unknown setting `%s`", path, number,
				       name);
			break;
		}
		char reason[256];
		if (!apply(config, id, value, reason, sizeof reason))
			ok = text_fail(error, size, "%s:%d: %s", path, number, reason);
	}
	fclose(file);
	return ok;
}

static char *absolute(const char *path)
{
	if (path[0] == '/')
		return xstrdup(path);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return xstrdup(path);
	return xasprintf("%s/%s", cwd, path);
}

static void absolutize(char **slot)
{
	char *full = absolute(*slot);
	free(*slot);
	*slot = full;
}

/* Defaults that depend on other settings (--dev, the run dir) come last. */
static void finish(struct boxd_config *config)
{
	if (config->dev) {
		if (!config->work_dir)
			config->work_dir = xstrdup(".boxd-dev/work");
		if (!config->run_dir)
			config->run_dir = xstrdup(".boxd-dev/run");
		config->vsock_port = -1;
		config->ingress_base = -1;
		if (!config->hosts_file)
			config->hosts_file = xstrdup(".boxd-dev/hosts");
	}
	if (!config->work_dir)
		config->work_dir = xstrdup("/work");
	if (!config->run_dir)
		config->run_dir = xstrdup("/run/boxd");
	absolutize(&config->work_dir);
	absolutize(&config->run_dir);
	if (!config->socket_path)
		config->socket_path = xasprintf("%s/boxd.sock", config->run_dir);
	absolutize(&config->socket_path);
	if (!config->display)
		config->display = xstrdup(":99");
	if (!config->hosts_file)
		config->hosts_file = xstrdup("/etc/hosts");
	absolutize(&config->hosts_file);
	if (!config->user)
		config->user = xstrdup("root");
}

static void defaults(struct boxd_config *config)
{
	memset(config, 0, sizeof *config);
	config->vsock_port = 1024;
	config->ingress_base = 20000;
	config->allowed_cids[0] = CONFIG_HOST_CID;
	config->allowed_cid_count = 1;
	config->report_interval_sec = 30;
	config->screen_idle_sec = 60;
	config->freeze_limit_sec = 600;
	config->log_cap_bytes = 512ull << 20;
	config->cgroup = CGROUP_MODE_AUTO;
	config->idle_timeout_sec = 60;
	config->changes_keep = 100000;
	config->changes_keep_sec = 3600;
	config->log_level = LOG_LEVEL_INFO;
}

/* The config file is read first so that flags, wherever they stand, win. */
static const char *find_config_flag(int argc, char **argv)
{
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			path = argv[++i];
		else if (strncmp(argv[i], "--config=", 9) == 0)
			path = argv[i] + 9;
	}
	return path;
}

bool config_parse(struct boxd_config *config, int argc, char **argv, char *error, size_t size,
		  bool *show_help, bool *show_version)
{
	defaults(config);
	*show_help = *show_version = false;
	const char *file = find_config_flag(argc, argv);
	if (file && !load_file(config, file, error, size))
		return false;

	optind = 1;
	opterr = 0;
	int id;
	while ((id = getopt_long(argc, argv, "hV", long_options, NULL)) != -1) {
		switch (id) {
		case OPT_HELP:
		case 'h': *show_help = true; return true;
		case OPT_VERSION:
		case 'V': *show_version = true; return true;
		case OPT_CONFIG: break;
		case OPT_DEV: config->dev = true; break;
		case '?':
			return text_fail(error, size,
					 "unknown or incomplete option `%s` (see --help)",
					 argv[optind - 1]);
		default:
			if (!apply(config, id, optarg, error, size))
				return false;
		}
	}
	if (optind < argc)
		return text_fail(error, size, "unexpected argument `%s` (see --help)",
				 argv[optind]);
	finish(config);
	return true;
}

void config_free(struct boxd_config *config)
{
	free(config->work_dir);
	free(config->run_dir);
	free(config->socket_path);
	free(config->display);
	free(config->hosts_file);
	free(config->user);
	free(config->report);
	free(config->commands_cgroup);
	memset(config, 0, sizeof *config);
}
