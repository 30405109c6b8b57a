/* docker-cli.c: one docker CLI call, its output captured (docker-cli.h). */
#include "docker-cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xalloc.h"

extern char **environ;

#define DEFAULT_DOCKER_SOCKET "/var/run/docker.sock"

struct capture {
	char *data;
	size_t length, capacity;
};

static void capture_add(struct capture *capture, const char *bytes, size_t length)
{
	if (capture->length + length + 1 > capture->capacity) {
		capture->capacity = (capture->length + length + 1) * 2;
		capture->data = xrealloc(capture->data, capture->capacity);
	}
	memcpy(capture->data + capture->length, bytes, length);
	capture->length += length;
	capture->data[capture->length] = '\0';
}

static char *capture_text(struct capture *capture)
{
	if (!capture->data)
		return xstrdup("");
	while (capture->length > 0 && (capture->data[capture->length - 1] == '\n' ||
				       capture->data[capture->length - 1] == '\r'))
		capture->data[--capture->length] = '\0';
	return capture->data;
}

/* Reads both pipes to their ends (either may fill while the other waits). */
static void drain(int out_fd, int err_fd, struct capture *out, struct capture *err)
{
	struct pollfd fds[2] = {{.fd = out_fd, .events = POLLIN}, {.fd = err_fd, .events = POLLIN}};
	struct capture *captures[2] = {out, err};
	int open_count = err_fd >= 0 ? 2 : 1;
	if (err_fd < 0)
		fds[1].fd = -1;
	while (open_count > 0) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !fds[i].revents)
				continue;
			char buffer[8192];
			ssize_t got = read(fds[i].fd, buffer, sizeof buffer);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				fds[i].fd = -1;
				open_count--;
				continue;
			}
			capture_add(captures[i], buffer, (size_t)got);
		}
	}
}

struct docker_result docker_call(const char *const args[], bool pass_stderr)
{
	size_t count = 0;
	while (args[count])
		count++;
	char **argv = xcalloc(count + 2, sizeof *argv);
	argv[0] = (char *)"docker";
	for (size_t i = 0; i < count; i++)
		argv[i + 1] = (char *)args[i];

	struct docker_result result = {.status = -1};
	int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	if (pipe2(out_pipe, O_CLOEXEC) < 0 || (!pass_stderr && pipe2(err_pipe, O_CLOEXEC) < 0)) {
		result.err = xasprintf("cannot make a pipe: %s", strerror(errno));
		goto done;
	}
	posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
	if (!pass_stderr)
		posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
	pid_t pid;
	int spawned = posix_spawnp(&pid, "docker", &actions, NULL, argv, environ);
	close(out_pipe[1]);
	out_pipe[1] = -1;
	if (err_pipe[1] >= 0) {
		close(err_pipe[1]);
		err_pipe[1] = -1;
	}
	if (spawned != 0) {
		result.err = spawned == ENOENT
				     ? xstrdup("docker is not installed (no `docker` on PATH)")
				     : xasprintf("cannot run docker: %s", strerror(spawned));
		goto done;
	}
	struct capture out = {0}, err = {0};
	drain(out_pipe[0], err_pipe[0], &out, &err);
	int wait_status;
	while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR)
		;
	result.status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
	result.out = capture_text(&out);
	result.err = capture_text(&err);
done:
	posix_spawn_file_actions_destroy(&actions);
	for (int i = 0; i < 2; i++) {
		if (out_pipe[i] >= 0)
			close(out_pipe[i]);
		if (err_pipe[i] >= 0)
			close(err_pipe[i]);
	}
	if (!result.out)
		result.out = xstrdup("");
	if (!result.err)
		result.err = xstrdup("");
	free(argv);
	return result;
}

void docker_result_free(struct docker_result *result)
{
	free(result->out);
	free(result->err);
	result->out = result->err = NULL;
}

/* PATH holds an executable `docker`. */
static bool docker_on_path(void)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	char *copy = xstrdup(path), *save = NULL;
	bool found = false;
	for (char *dir = strtok_r(copy, ":", &save); dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		char *candidate = xasprintf("%s/docker", dir);
		found = access(candidate, X_OK) == 0;
		free(candidate);
	}
	free(copy);
	return found;
}

bool docker_reachable(char *error, size_t size)
{
	if (!docker_on_path()) {
		snprintf(error, size, "docker is not installed (no `docker` on PATH)");
		return false;
	}
	const char *host = getenv("DOCKER_HOST");
	const char *socket_path = DEFAULT_DOCKER_SOCKET;
	if (host && *host) {
		if (strncmp(host, "unix://", 7) != 0)
			return true;
		socket_path = host + 7;
	}
	struct sockaddr_un address = {.sun_family = AF_UNIX};
	if (strlen(socket_path) >= sizeof address.sun_path) {
		snprintf(error, size, "the Docker socket path is too long: %s", socket_path);
		return false;
	}
	strcpy(address.sun_path, socket_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool reached = fd >= 0 && connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
	int saved = errno;
	if (fd >= 0)
		close(fd);
	if (!reached && (saved == EACCES || saved == EPERM))
		snprintf(error, size,
			 "cannot use Docker: %s is not open to this user (%s); run as root or as "
			 "a member of the docker group",
			 socket_path, strerror(saved));
	else if (!reached)
		snprintf(error, size,
			 "Docker is not running: cannot connect to %s (%s); start it with "
			 "`systemctl start docker`",
			 socket_path, strerror(saved));
	return reached;
}
