/* testdb.c: up, reset, down and ls (testdb.h). */
#include "testdb.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "docker-cli.h"
#include "io.h"
#include "random-id.h"
#include "xalloc.h"

#define DEFAULT_DIR "/work/.sbx/testdb"
#define LABEL "psbx-testdb"
#define LABEL_ENGINE "psbx-testdb.engine"
#define LABEL_PASSWORD "psbx-testdb.password"
#define NAME_MAX_LENGTH 48
/* How long `up` waits for a server to answer (an image being pulled is not
 * counted: docker run returns once it has started the container). MySQL
 * 8.0's first start sets up its system tables, some 20 s on a slow box. */
#define DEFAULT_UP_TIMEOUT_S 180

void testdb_say(const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	fputs(TESTDB_PROGRAM ": ", stderr);
	vfprintf(stderr, fmt, args);
	fputc('\n', stderr);
	va_end(args);
}

static double now_s(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

const char *testdb_dir(void)
{
	const char *dir = getenv("PSBX_TESTDB_DIR");
	return dir && *dir ? dir : DEFAULT_DIR;
}

bool testdb_name_valid(const char *name, char *error, size_t size)
{
	size_t length = strlen(name);
	bool valid = length >= 1 && length <= NAME_MAX_LENGTH &&
		     strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == length &&
		     name[0] != '-' && name[0] != '_';
	if (!valid)
		snprintf(error, size,
			 "'%s' is not a test database name: 1 to %d of a-z, 0-9, _ and -, "
			 "starting with a letter or a digit",
			 name, NAME_MAX_LENGTH);
	return valid;
}

static char *container_of(const char *name)
{
	return xasprintf(LABEL "-%s", name);
}

static char *env_path(const char *name)
{
	return xasprintf("%s/%s.env", testdb_dir(), name);
}

/* mkdir -p, the last folder 0700: the env files hold passwords. */
static bool make_dir(const char *dir)
{
	char *copy = xstrdup(dir);
	for (char *slash = strchr(copy + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(copy, 0755) < 0 && errno != EEXIST) {
			testdb_say("cannot make %s: %s", copy, strerror(errno));
			free(copy);
			return false;
		}
		*slash = '/';
	}
	free(copy);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		testdb_say("cannot make %s: %s", dir, strerror(errno));
		return false;
	}
	return true;
}

/* NAME.env, replaced whole, 0600. */
static bool write_env(const char *name, const char *url)
{
	if (!make_dir(testdb_dir()))
		return false;
	char *path = env_path(name);
	char *line = xasprintf("DATABASE_URL=%s\n", url);
	bool written = io_replace_file(path, line, strlen(line), 0600, 0);
	if (!written)
		testdb_say("cannot write %s: %s", path, strerror(errno));
	free(path);
	free(line);
	return written;
}

void testdb_free(struct testdb *db)
{
	free(db->container);
	free(db->password);
	free(db->host_port);
	memset(db, 0, sizeof *db);
}

/* "ENGINE|PASSWORD|RUNNING|IP:PORT IP:PORT ..." from docker inspect. */
static bool parse_inspect(char *text, struct testdb *out)
{
	char *save = NULL;
	char *engine = strtok_r(text, "|", &save);
	char *password = strtok_r(NULL, "|", &save);
	char *running = strtok_r(NULL, "|", &save);
	char *ports = strtok_r(NULL, "|", &save);
	out->engine = engine ? engine_named(engine) : NULL;
	if (!out->engine || !password || !running)
		return false;
	out->password = xstrdup(password);
	out->running = strcmp(running, "true") == 0;
	for (char *binding = ports ? strtok_r(ports, " ", &save) : NULL; binding && out->running;
	     binding = strtok_r(NULL, " ", &save)) {
		if (strncmp(binding, "127.0.0.1:", 10) == 0 && binding[10]) {
			out->host_port = xstrdup(binding);
			break;
		}
	}
	return true;
}

int testdb_find(const char *name, struct testdb *out)
{
	memset(out, 0, sizeof *out);
	char *container = container_of(name);
	const char *args[] = {"inspect",
			      "--type",
			      "container",
			      "--format",
			      "{{index .Config.Labels \"" LABEL_ENGINE "\"}}|"
			      "{{index .Config.Labels \"" LABEL_PASSWORD "\"}}|{{.State.Running}}|"
			      "{{range $p, $b := .NetworkSettings.Ports}}{{range $b}}"
			      "{{.HostIp}}:{{.HostPort}} {{end}}{{end}}",
			      container,
			      NULL};
	struct docker_result result = docker_call(args, false);
	int found;
	if (result.status == 0 && parse_inspect(result.out, out)) {
		out->container = container;
		container = NULL;
		found = 1;
	} else if (result.status == 0) {
		testdb_say(
			"a container named %s exists that psbx-testdb did not make; remove it or "
			"choose another name",
			container);
		testdb_free(out);
		found = -1;
	} else if (strstr(result.err, "No such")) {
		found = 0;
	} else {
		testdb_say("docker inspect failed: %s", result.err);
		found = -1;
	}
	free(container);
	docker_result_free(&result);
	return found;
}

static bool recreate(const struct testdb *db, const char *database, char *error, size_t size)
{
	struct engine_server server = {
		.container = db->container, .host_port = db->host_port, .password = db->password};
	return db->engine->recreate(&server, database, error, size);
}

/* NAME's server as its env file names it (the URL holds the engine, the
 * password and the port): no docker call, which alone costs more than a
 * reset on a slow box. False when there is no such file or it does not
 * parse. */
static bool from_env_file(const char *name, struct testdb *out)
{
	memset(out, 0, sizeof *out);
	char *path = env_path(name);
	FILE *file = fopen(path, "re");
	free(path);
	if (!file)
		return false;
	char line[1024];
	bool read = fgets(line, sizeof line, file) != NULL;
	fclose(file);
	const char *url = read && strncmp(line, "DATABASE_URL=", 13) == 0 ? line + 13 : NULL;
	const char *scheme_end = url ? strstr(url, "://" TESTDB_USER ":") : NULL;
	const char *at = scheme_end ? strchr(scheme_end, '@') : NULL;
	const char *slash = at ? strchr(at, '/') : NULL;
	if (!slash)
		return false;
	char *scheme = xstrndup(url, (size_t)(scheme_end - url));
	out->engine = engine_named(scheme);
	free(scheme);
	if (!out->engine)
		return false;
	const char *password = scheme_end + strlen("://" TESTDB_USER ":");
	out->password = xstrndup(password, (size_t)(at - password));
	out->host_port = xstrndup(at + 1, (size_t)(slash - at - 1));
	out->container = container_of(name);
	out->running = true;
	return true;
}

int testdb_locate(const char *name, struct testdb *out)
{
	if (from_env_file(name, out))
		return 1;
	testdb_free(out);
	int found = testdb_find(name, out);
	if (found == 1 && (!out->running || !out->host_port)) {
		testdb_free(out);
		return 0;
	}
	return found;
}

bool testdb_recreate(const char *name, struct testdb *db, const char *database)
{
	char error[512];
	if (recreate(db, database, error, sizeof error))
		return true;
	/* The env file may be older than the server (made again by hand), or
	 * outlive it (removed by hand): Docker says where it is now. */
	struct testdb fresh;
	int found = testdb_find(name, &fresh);
	if (found == 1 && fresh.running && fresh.host_port &&
	    (strcmp(fresh.host_port, db->host_port) != 0 ||
	     strcmp(fresh.password, db->password) != 0)) {
		testdb_free(db);
		*db = fresh;
		if (recreate(db, database, error, sizeof error))
			return true;
	} else if (found == 0 || (found == 1 && !fresh.running)) {
		testdb_say("there is no test database %s running (`psbx-testdb up %s` starts it)",
			   name, name);
		testdb_free(&fresh);
		return false;
	} else {
		testdb_free(&fresh);
	}
	testdb_say("cannot make database %s anew in %s: %s", database, db->container, error);
	return false;
}

void testdb_remove(const char *name)
{
	char *container = container_of(name);
	const char *args[] = {"rm", "--force", "--volumes", container, NULL};
	struct docker_result result = docker_call(args, false);
	docker_result_free(&result);
	char *path = env_path(name);
	unlink(path);
	free(path);
	free(container);
}

/* Docker's last words about a container that stopped on its way up. */
static void show_logs(const char *container)
{
	const char *args[] = {"logs", "--tail", "30", container, NULL};
	struct docker_result result = docker_call(args, false);
	if (*result.out || *result.err)
		fprintf(stderr, "%s%s%s\n", result.out, *result.out ? "\n" : "", result.err);
	docker_result_free(&result);
}

static double up_timeout(void)
{
	const char *text = getenv("PSBX_TESTDB_TIMEOUT");
	double seconds = text ? atof(text) : 0;
	return seconds > 0 ? seconds : DEFAULT_UP_TIMEOUT_S;
}

/* Waits for NAME's server to answer; false (said) when it stopped or the
 * time ran out. Fills db->host_port once Docker has published the port. */
static bool wait_ready(const char *name, struct testdb *db)
{
	double deadline = now_s() + up_timeout();
	char detail[256] = "it never answered";
	for (unsigned round = 0;; round++) {
		if (!db->host_port || round % 20 == 19) {
			struct testdb fresh;
			if (testdb_find(name, &fresh) != 1) {
				testdb_say("%s is gone", db->container);
				return false;
			}
			if (!fresh.running) {
				testdb_say("%s stopped before it took connections; its log:",
					   db->container);
				show_logs(db->container);
				testdb_free(&fresh);
				return false;
			}
			free(db->host_port);
			db->host_port = fresh.host_port;
			fresh.host_port = NULL;
			testdb_free(&fresh);
		}
		if (db->host_port && db->engine->answers(db->host_port, detail, sizeof detail))
			return true;
		if (now_s() > deadline) {
			testdb_say("%s did not take connections in %.0f s (%s); its log:",
				   db->container, up_timeout(), detail);
			show_logs(db->container);
			return false;
		}
		usleep(50 * 1000);
	}
}

/* docker run -d for a new server; false (said) when it did not start. */
static bool start_container(const char *name, const struct testdb_options *options,
			    const char *password, const char *image)
{
	const struct engine *engine = options->engine;
	char *container = container_of(name);
	char *label_name = xasprintf(LABEL "=%s", name);
	char *label_engine = xasprintf(LABEL_ENGINE "=%s", engine->name);
	char *label_password = xasprintf(LABEL_PASSWORD "=%s", password);
	char *publish = xasprintf("127.0.0.1::%s", engine->port);
	const char *args[40] = {"run",       "--detach",     "--name",  container,
				"--label",   label_name,     "--label", label_engine,
				"--label",   label_password, "--tmpfs", engine->data_dir,
				"--publish", publish};
	size_t count = 14;
	size_t env_from = count;
	engine->run_env(password, args, &count);
	args[count++] = image;
	args[count] = NULL;
	struct docker_result result = docker_call(args, true);
	bool started = result.status == 0;
	if (!started)
		testdb_say("docker run %s did not start%s", image,
			   result.status < 0 && *result.err ? result.err
							    : " (Docker said why, above)");
	docker_result_free(&result);
	for (size_t i = env_from + 1; i < count - 1; i += 2)
		free((char *)args[i]);
	free(container);
	free(label_name);
	free(label_engine);
	free(label_password);
	free(publish);
	return started;
}

/* An existing server under NAME: reused when it runs the same engine (its
 * URL written again), else an error. 1 reused, 0 start anew, -1 failed. */
static int reuse_existing(const char *name, const struct testdb_options *options)
{
	struct testdb db;
	int found = testdb_find(name, &db);
	if (found != 1)
		return found;
	int outcome = 0;
	if (db.engine != options->engine) {
		testdb_say("%s is a %s server; `psbx-testdb down %s` first to make it %s", name,
			   db.engine->name, name, options->engine->name);
		outcome = -1;
	} else if (db.running && db.host_port) {
		char *url = db.engine->url(db.password, db.host_port, TESTDB_DATABASE);
		testdb_say("%s is already up (`psbx-testdb reset %s` empties it)", name, name);
		outcome = write_env(name, url) ? 1 : -1;
		if (outcome == 1 && options->print_url)
			printf("DATABASE_URL=%s\n", url);
		free(url);
	} else {
		/* Stopped (the box restarted): its tmpfs is gone with it. */
		testdb_remove(name);
	}
	testdb_free(&db);
	return outcome;
}

int testdb_up(const char *name, const struct testdb_options *options)
{
	int existing = reuse_existing(name, options);
	if (existing != 0)
		return existing == 1 ? 0 : 1;
	const char *image = options->image;
	if (!image || !*image)
		image = getenv("PSBX_TESTDB_IMAGE");
	if (!image || !*image)
		image = options->engine->default_image;

	double start = now_s();
	char password[17];
	random_hex(password, 8);
	if (!start_container(name, options, password, image))
		return 1;
	struct testdb db = {.container = container_of(name),
			    .engine = options->engine,
			    .password = xstrdup(password),
			    .running = true};
	bool ready = wait_ready(name, &db);
	char *url = ready ? db.engine->url(password, db.host_port, TESTDB_DATABASE) : NULL;
	if (ready && !write_env(name, url))
		ready = false;
	if (!ready) {
		testdb_remove(name);
	} else {
		testdb_say("%s (%s, %s) up in %.1f s at %s", name, db.engine->name, image,
			   now_s() - start, db.host_port);
		if (options->print_url)
			printf("DATABASE_URL=%s\n", url);
	}
	free(url);
	testdb_free(&db);
	return ready ? 0 : 1;
}

/* NAME's running server into `db`; false (said) otherwise. */
static bool find_running(const char *name, struct testdb *db)
{
	int found = testdb_locate(name, db);
	if (found == 0)
		testdb_say("there is no test database %s running (`psbx-testdb ls` lists them; "
			   "`psbx-testdb up %s` starts it)",
			   name, name);
	return found == 1;
}

int testdb_reset(const char *name)
{
	struct testdb db;
	if (!find_running(name, &db))
		return 1;
	double start = now_s();
	bool done = testdb_recreate(name, &db, TESTDB_DATABASE);
	if (done) {
		char *url = db.engine->url(db.password, db.host_port, TESTDB_DATABASE);
		done = write_env(name, url);
		if (done) {
			testdb_say("%s emptied in %.2f s", name, now_s() - start);
			printf("DATABASE_URL=%s\n", url);
		}
		free(url);
	}
	testdb_free(&db);
	return done ? 0 : 1;
}

int testdb_down(const char *name)
{
	struct testdb db;
	int found = testdb_find(name, &db);
	if (found < 0)
		return 1;
	char *path = env_path(name);
	bool had_env = access(path, F_OK) == 0;
	free(path);
	if (found == 0 && !had_env) {
		testdb_say("there is no test database %s (`psbx-testdb ls` lists them)", name);
		return 1;
	}
	testdb_remove(name);
	testdb_free(&db);
	testdb_say("%s is down", name);
	return 0;
}

int testdb_ls(void)
{
	const char *args[] = {
		"ps",
		"--all",
		"--filter",
		"label=" LABEL,
		"--format",
		"{{.Label \"" LABEL "\"}}\t{{.Label \"" LABEL_ENGINE "\"}}\t{{.State}}\t{{.Image}}",
		NULL};
	struct docker_result result = docker_call(args, false);
	if (result.status != 0) {
		testdb_say("docker ps failed: %s", result.err);
		docker_result_free(&result);
		return 1;
	}
	printf("%-24s %-9s %-8s %-20s %s\n", "NAME", "ENGINE", "STATE", "IMAGE", "ENV");
	char *save = NULL;
	for (char *line = strtok_r(result.out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *fields[4] = {0}, *field_save = NULL;
		char *field = strtok_r(line, "\t", &field_save);
		for (int i = 0; i < 4 && field; i++, field = strtok_r(NULL, "\t", &field_save))
			fields[i] = field;
		if (!fields[3])
			continue;
		char *path = env_path(fields[0]);
		printf("%-24s %-9s %-8s %-20s %s\n", fields[0], fields[1], fields[2], fields[3],
		       access(path, F_OK) == 0 ? path : "-");
		free(path);
	}
	docker_result_free(&result);
	return 0;
}
