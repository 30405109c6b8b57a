#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config.h"

static bool parse(struct boxd_config *config, char *error, int argc, char **argv)
{
	bool help, version;
	return config_parse(config, argc, argv, error, 256, &help, &version);
}

int main(void)
{
	struct boxd_config config;
	char error[256];

	char *defaults[] = {"boxd", NULL};
	CHECK(parse(&config, error, 1, defaults));
	CHECK(strcmp(config.work_dir, "/work") == 0);
	CHECK(strcmp(config.run_dir, "/run/boxd") == 0);
	CHECK(strcmp(config.socket_path, "/run/boxd/boxd.sock") == 0);
	CHECK(config.vsock_port == 1024 && strcmp(config.display, ":99") == 0);
	CHECK(strcmp(config.user, "root") == 0 && config.report == NULL);
	CHECK(config.report_interval_sec == 30 && config.cgroup == CGROUP_MODE_AUTO);
	CHECK(config.allowed_cid_count == 1 && config.allowed_cids[0] == 2);
	config_free(&config);

	char *dev[] = {"boxd", "--dev", "--vsock-allow-cid", "3", NULL};
	CHECK(parse(&config, error, 4, dev));
	CHECK(config.vsock_port == -1);
	CHECK(strstr(config.work_dir, "/.boxd-dev/work") && config.work_dir[0] == '/');
	CHECK(strstr(config.socket_path, "/.boxd-dev/run/boxd.sock"));
	CHECK(config.allowed_cid_count == 2 && config.allowed_cids[1] == 3);
	config_free(&config);

	char *bad_port[] = {"boxd", "--vsock-port", "70000000000", NULL};
	CHECK(!parse(&config, error, 3, bad_port) && strstr(error, "--vsock-port"));
	config_free(&config);
	char *bad_report[] = {"boxd", "--report", "http://x", NULL};
	CHECK(!parse(&config, error, 3, bad_report) && strstr(error, "--report"));
	config_free(&config);

	char path[] = "/tmp/boxd-config-XXXXXX";
	int fd = mkstemp(path);
	FILE *file = fdopen(fd, "w");
	fprintf(file, "# comment\n\nwork-dir = /srv/w \nreport = unix:/tmp/r.sock\ncgroup=off\n");
	fclose(file);
	char *with_file[] = {"boxd", "--config", path, "--cgroup", "auto", NULL};
	CHECK(parse(&config, error, 5, with_file));
	CHECK(strcmp(config.work_dir, "/srv/w") == 0);
	CHECK(config.report && strcmp(config.report, "unix:/tmp/r.sock") == 0);
	CHECK(config.cgroup == CGROUP_MODE_AUTO); /* the flag wins over the file */
	config_free(&config);

	file = fopen(path, "w");
	fprintf(file, "display = :1\nnot a setting\n");
	fclose(file);
	char *broken_file[] = {"boxd", "--config", path, NULL};
	CHECK(!parse(&config, error, 3, broken_file) && strstr(error, ":2:"));
	config_free(&config);
	unlink(path);
	return check_done("config");
}
