/* main.c: boxd's start, its loop and its clean shutdown. */
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive-client.h"
#include "capabilities.h"
#include "callers.h"
#include "changes.h"
#include "config.h"
#include "downloads.h"
#include "files.h"
#include "clock.h"
#include "exec.h"
#include "freeze.h"
#include "activity.h"
#include "health.h"
#include "init.h"
#include "handback.h"
#include "lock.h"
#include "log.h"
#include "notify.h"
#include "protect.h"
#include "recording.h"
#include "report.h"
#include "resumable-uploads.h"
#include "screen-client.h"
#include "credentials.h"
#include "secrets.h"
#include "services.h"
#include "upload.h"
#include "api.h"
#include "router.h"
#include "server.h"

static struct event_base *base;
static struct boxd_config config;

static void on_stop_signal(evutil_socket_t signal_number, short what, void *arg)
{
	log_msg(LOG_LEVEL_INFO, "%s received; stopping", strsignal((int)signal_number));
	notify_send("STOPPING=1");
	event_base_loopbreak(base);
}

/* 500 concurrent clients need more than the usual 1024 descriptors. */
static void raise_file_limit(void)
{
	struct rlimit limit;
	if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
		limit.rlim_cur = limit.rlim_max;
		setrlimit(RLIMIT_NOFILE, &limit);
	}
}

static bool make_dirs(const char *path, mode_t mode)
{
	char partial[4096];
	snprintf(partial, sizeof partial, "%s", path);
	for (char *slash = partial + 1;; slash++) {
		bool end = *slash == '\0';
		if (*slash == '/' || end) {
			*slash = '\0';
			if (mkdir(partial, mode) != 0 && errno != EEXIST)
				return false;
			if (end)
				return true;
			*slash = '/';
		}
	}
}

static bool prepare_dirs(void)
{
	if (!make_dirs(config.work_dir, 0755)) {
		log_msg(LOG_LEVEL_ERROR, "cannot create the work dir %s: %s", config.work_dir,
			strerror(errno));
		return false;
	}
	if (!make_dirs(config.run_dir, 0755)) {
		log_msg(LOG_LEVEL_ERROR, "cannot create the run dir %s: %s", config.run_dir,
			strerror(errno));
		return false;
	}
	return true;
}

static int parse_arguments(int argc, char **argv)
{
	char error[512];
	bool show_help, show_version;
	if (!config_parse(&config, argc, argv, error, sizeof error, &show_help, &show_version)) {
		fprintf(stderr, "boxd: %s\n", error);
		return 2;
	}
	if (show_help) {
		config_usage(argv[0]);
		return 0;
	}
	if (show_version) {
		printf("boxd %s\n", BOXD_VERSION);
		return 0;
	}
	return -1;
}

/* The router's uses of the box, as activity's reasons. */
static void router_use(enum router_use use, bool begins)
{
	static const enum activity_reason reasons[] = {
		[ROUTER_USE_CALL] = ACTIVITY_CALL,
		[ROUTER_USE_STREAM] = ACTIVITY_STREAM,
		[ROUTER_USE_UPLOAD] = ACTIVITY_UPLOAD,
		[ROUTER_USE_LIVE_VIEW] = ACTIVITY_LIVE_VIEW,
	};
	(begins ? activity_begin : activity_end)(reasons[use]);
}

static bool start_services(void)
{
	char error[512];
	activity_init();
	/* Before serving: the first answer already masks restored secrets. */
	secrets_init(config.run_dir, config.work_dir);
	credentials_init(config.run_dir, config.user);
	archive_client_init(base, &config);
	screen_client_init(base, config.display, config.screen_idle_sec);
	recording_init(config.work_dir);
	/* Before boxd starts any process: each is recorded there as it starts. */
	protect_init(config.run_dir);
	notify_on_watchdog(protect_stay_home);
	/* First of all: the worker's start (its libraries, the X connection,
	 * the warm-up encode) is the longest, and runs beside boxd's own. */
	screen_client_start_ahead();
	upload_init(&config);
	resumable_uploads_init(&config);
	downloads_init(base, &config);
	files_init(base, &config);
	init_start(config.run_dir, config.hosts_file);
	services_init(base, &config);
	lock_init(config.run_dir);
	api_init(&config);
	static const struct router_hooks hooks = {
		.use = router_use,
		.frozen = freeze_active,
		.locked = lock_is_locked,
		.is_command = callers_is_command,
	};
	router_setup(api_route_tables, &hooks);
	if (!server_start(base, &config, error, sizeof error)) {
		log_msg(LOG_LEVEL_ERROR, "%s", error);
		return false;
	}
	health_init(base, config.work_dir, config.run_dir, config.display);
	/* From the start, whether or not anyone asks: the lock's hand-back
	 * tells what changed while a person had the screen. The walk goes in
	 * slices behind the answers. */
	changes_init(base, &config);
	exec_init(base, &config);
	/* Once the commands' cgroup is known: the routes that act for the
	 * control plane refuse commands from the first request on. */
	callers_init(protect_dir(), exec_commands_cgroup());
	handback_init(base, &config);
	if (lock_is_locked())
		handback_begin(true);
	freeze_init(base, config.run_dir, config.freeze_limit_sec, exec_commands_cgroup(),
		    exec_shims_cgroup());
	if (config.report &&
	    !report_start(base, config.report, config.report_interval_sec, error, sizeof error)) {
		log_msg(LOG_LEVEL_ERROR, "%s", error);
		return false;
	}
	return true;
}

static void stop_services(void)
{
	report_stop();
	freeze_stop();
	services_stop();
	health_stop();
	changes_stop();
	server_stop();
	exec_shutdown();
	notify_stop();
	credentials_shutdown();
	secrets_shutdown();
}

int main(int argc, char **argv)
{
	int64_t start_us = clock_monotonic_us();
	int early = parse_arguments(argc, argv);
	if (early >= 0)
		return early;
	log_set_level(config.log_level);
	signal(SIGPIPE, SIG_IGN);
	raise_file_limit();
	if (!prepare_dirs())
		return 1;
	/* Before any thread starts: capabilities are per thread. */
	char cap_error[256];
	if (!capabilities_drop(cap_error, sizeof cap_error))
		log_msg(LOG_LEVEL_WARNING, "%s; boxd keeps the capabilities it started with",
			cap_error);

	base = event_base_new();
	/* Three priorities: every event at the middle one, and the lowest for
	 * work that should wait until nothing else is pending (exec's spares). */
	event_base_priority_init(base, 3);
	struct event *term = evsignal_new(base, SIGTERM, on_stop_signal, NULL);
	struct event *interrupt = evsignal_new(base, SIGINT, on_stop_signal, NULL);
	event_add(term, NULL);
	event_add(interrupt, NULL);
	notify_init(base);
	if (!start_services()) {
		stop_services();
		return 1;
	}
	log_msg(LOG_LEVEL_INFO, "boxd %s ready in %.1f ms (work dir %s, run dir %s)", BOXD_VERSION,
		(double)(clock_monotonic_us() - start_us) / 1000.0, config.work_dir,
		config.run_dir);
	notify_send("READY=1\nSTATUS=serving on %s", config.socket_path);

	event_base_dispatch(base);

	stop_services();
	event_free(term);
	event_free(interrupt);
	event_base_free(base);
	config_free(&config);
	log_msg(LOG_LEVEL_INFO, "stopped");
	return 0;
}
