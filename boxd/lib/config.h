/* config.h: boxd's settings, from flags and an optional config file.
 *
 * The config file holds `name = value` lines whose names are the long flags
 * without their dashes (`work-dir = /work`); `#` starts a comment. Flags given
 * on the command line win over the file. */
#ifndef BOXD_CONFIG_H
#define BOXD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "log.h"

#define CONFIG_MAX_ALLOWED_CIDS 8
#define CONFIG_HOST_CID 2u

enum cgroup_mode { CGROUP_MODE_AUTO, CGROUP_MODE_OFF };

struct boxd_config {
	char *work_dir;                                 /* absolute */
	char *run_dir;                                  /* absolute */
	char *socket_path;                              /* absolute */
	int vsock_port;                                 /* -1: off */
	unsigned allowed_cids[CONFIG_MAX_ALLOWED_CIDS]; /* the host (2) is always first */
	int allowed_cid_count;
	/* A freeze nobody undoes is undone by boxd after this much running time. */
	int freeze_limit_sec;
	long ingress_base; /* the way in: vsock port ingress_base + a service's port; -1: off */
	char *display;     /* ":99" */
	char *hosts_file;  /* whose boxd block POST /v1/init rewrites: /etc/hosts */
	char *user;        /* default user of commands */
	char *report;      /* NULL: off; else "vsock:CID:PORT" or "unix:PATH" */
	int report_interval_sec;
	int screen_idle_sec; /* the screen worker exits after this long unused; 0: never */
	enum cgroup_mode cgroup;
	char *commands_cgroup; /* cgroup v2 path for commands (a delegated unit), or NULL */
	bool dev;
	int idle_timeout_sec; /* a connection silent this long is dropped */
	/* What a command's log keeps on disk at most (its newest output). */
	unsigned long long log_cap_bytes;
	/* The changes journal keeps at least this many changes, and those of the
	 * last changes_keep_sec (docs/changes.md). */
	size_t changes_keep;
	int changes_keep_sec;
	enum log_level log_level;
};

/* Fills `config` from argv (and the --config file it names). On a usage
 * error returns false with a sentence in `error`; `*show_help` is set for
 * --help and `*show_version` for --version. */
bool config_parse(struct boxd_config *config, int argc, char **argv, char *error, size_t error_size,
		  bool *show_help, bool *show_version);
void config_free(struct boxd_config *config);
void config_usage(const char *program);

#endif
