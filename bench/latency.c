/* latency.c: round trips over a unix socket, timed in C so the client's own
 * cost is the same small constant on both sides of a comparison.
 *
 *   latency http SOCKET PATH N   GET PATH on a kept-alive connection, N times
 *   latency echo N BYTES         the same request bytes to an echo server of
 *                                its own (a forked child) and BYTES back
 * Prints "p50_us p90_us p99_us". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int compare(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void report(double *samples, int n)
{
	qsort(samples, (size_t)n, sizeof *samples, compare);
	printf("%.1f %.1f %.1f\n", samples[n / 2], samples[n * 9 / 10], samples[n * 99 / 100]);
}

static int connect_unix(const char *path)
{
	struct sockaddr_un address = {.sun_family = AF_UNIX};
	snprintf(address.sun_path, sizeof address.sun_path, "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
		perror("connect");
		exit(1);
	}
	return fd;
}

/* Reads one HTTP answer (headers and a Content-Length body). */
static void read_answer(int fd, char *buffer, size_t size)
{
	size_t have = 0;
	for (;;) {
		ssize_t n = read(fd, buffer + have, size - have - 1);
		if (n <= 0) {
			fprintf(stderr, "connection closed\n");
			exit(1);
		}
		have += (size_t)n;
		buffer[have] = '\0';
		char *end = strstr(buffer, "\r\n\r\n");
		char *length = strstr(buffer, "Content-Length: ");
		if (end && length &&
		    have >= (size_t)(end + 4 - buffer) + strtoul(length + 16, NULL, 10))
			return;
	}
}

static int run_http(const char *socket_path, const char *path, int count)
{
	int fd = connect_unix(socket_path);
	char request[256], buffer[65536];
	int length =
		snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: boxd\r\n\r\n", path);
	double *samples = malloc(sizeof *samples * (size_t)count);
	int status = 0;
	for (int i = -count / 10; i < count && !status; i++) {
		double start = now_us();
		if (write(fd, request, (size_t)length) != length) {
			status = 1;
			break;
		}
		read_answer(fd, buffer, sizeof buffer);
		if (i >= 0)
			samples[i] = now_us() - start;
	}
	if (!status)
		report(samples, count);
	free(samples);
	return status;
}

static int run_echo(int count, size_t answer_bytes)
{
	int pair[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
	const char request[] = "GET /v1/health HTTP/1.1\r\nHost: boxd\r\n\r\n";
	size_t request_length = sizeof request - 1;
	pid_t child = fork();
	if (child == 0) {
		close(pair[0]);
		char in[256], *out = calloc(1, answer_bytes);
		for (;;) {
			size_t got = 0;
			while (got < request_length) {
				ssize_t n = read(pair[1], in + got, request_length - got);
				if (n <= 0)
					_exit(0);
				got += (size_t)n;
			}
			if (write(pair[1], out, answer_bytes) != (ssize_t)answer_bytes)
				_exit(1);
		}
	}
	close(pair[1]);
	char *buffer = malloc(answer_bytes);
	double *samples = malloc(sizeof *samples * (size_t)count);
	int status = 0;
	for (int i = -count / 10; i < count && !status; i++) {
		double start = now_us();
		if (write(pair[0], request, request_length) != (ssize_t)request_length)
			status = 1;
		size_t got = 0;
		while (!status && got < answer_bytes) {
			ssize_t n = read(pair[0], buffer + got, answer_bytes - got);
			if (n <= 0)
				status = 1;
			else
				got += (size_t)n;
		}
		if (i >= 0 && !status)
			samples[i] = now_us() - start;
	}
	close(pair[0]);
	waitpid(child, NULL, 0);
	if (!status)
		report(samples, count);
	free(samples);
	free(buffer);
	return status;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "http") == 0)
		return run_http(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && strcmp(argv[1], "echo") == 0)
		return run_echo(atoi(argv[2]), (size_t)atol(argv[3]));
	fprintf(stderr, "usage: latency http SOCKET PATH N | latency echo N BYTES\n");
	return 2;
}
