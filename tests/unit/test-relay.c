/* The relay (boxd/services/relay.c) in a network namespace of the test's
 * own: nftables DNATs 198.18.0.2:3000 and :3001 to the relay's listener as
 * the services' rules do, and servers on 127.0.0.1 and ::1 stand for the
 * targets. Checks bytes intact both ways with a half-close, a destination
 * without a route, a target that refuses, relay_set() while a connection
 * is open. Prints (asserts nothing about) the throughput of 1 GiB through
 * the relay beside straight to the server, the latency of a small request
 * both ways, and the relay's memory per idle connection. These machines
 * have no vsock transport: the ingress listeners only fail to open, as on
 * a dev machine. Needs root, unshare and nft; skipped (77) without. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/vm_sockets.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "relay.h"

#define SKIP 77
#define ROUTED_IP "198.18.0.2"
#define ROUTED_PORT 3000
#define UNROUTED_PORT 3001
#define DATA_SIZE (8u << 20)
#define BULK_SIZE (1ull << 30)
#define IDLE_CONNECTIONS 100

/* store: a banner (the server's name), then everything read to the
 * client's end of file sent back, then close. sink: everything read to
 * the end of file counted, the count sent back (8 bytes), then close. */
enum server_mode { SERVER_STORE, SERVER_SINK };

/* vsock ports are in no network namespace: the test's are far from any
 * boxd's (20000 + port), and from another run's. */
static unsigned vsock_base;

struct server {
	int fd;
	char name;
	char *buffer; /* a store server's, for one connection at a time */
	enum server_mode mode;
	pthread_t thread;
	uint16_t port;
};

static double now_s(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static bool write_all(int fd, const char *data, size_t length)
{
	while (length > 0) {
		ssize_t n = send(fd, data, length, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		data += n;
		length -= (size_t)n;
	}
	return true;
}

/* Reads to the end of file into `into` (at most `size`): the count, or -1
 * on an error (a timeout included). */
static ssize_t read_to_end(int fd, char *into, size_t size)
{
	size_t total = 0;
	for (;;) {
		ssize_t n = read(fd, into + total, size - total);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0 || (total += (size_t)n) == size)
			return (ssize_t)total;
	}
}

static void serve_store(const struct server *server, int fd)
{
	if (!write_all(fd, &server->name, 1))
		return;
	ssize_t length = read_to_end(fd, server->buffer, DATA_SIZE + 1024);
	if (length > 0)
		write_all(fd, server->buffer, (size_t)length);
}

static void serve_sink(int fd)
{
	static char buffer[1 << 20];
	uint64_t total = 0;
	ssize_t n;
	while ((n = read(fd, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR))
		total += n > 0 ? (uint64_t)n : 0;
	write_all(fd, (const char *)&total, sizeof total);
}

/* One connection at a time, until the listener is shut down. */
static void *serve(void *arg)
{
	struct server *server = arg;
	for (;;) {
		int fd = accept(server->fd, NULL, NULL);
		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0)
			return NULL;
		if (server->mode == SERVER_STORE)
			serve_store(server, fd);
		else
			serve_sink(fd);
		close(fd);
	}
}

static int listen_on(int family, uint16_t *port)
{
	struct sockaddr_storage address;
	memset(&address, 0, sizeof address);
	socklen_t length;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (family == AF_INET6) {
		int on = 1; /* ::1 alone, as a server the kernel cannot DNAT to */
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&address;
		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_loopback;
		length = sizeof *in6;
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&address;
		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		length = sizeof *in;
	}
	if (fd < 0 || bind(fd, (struct sockaddr *)&address, length) != 0 || listen(fd, 256) != 0 ||
	    getsockname(fd, (struct sockaddr *)&address, &length) != 0) {
		perror("listen");
		exit(1);
	}
	*port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&address)->sin6_port
					 : ((struct sockaddr_in *)&address)->sin_port);
	return fd;
}

static void server_start(struct server *server, int family, char name, enum server_mode mode)
{
	server->name = name;
	server->mode = mode;
	server->fd = listen_on(family, &server->port);
	server->buffer = mode == SERVER_STORE ? malloc(DATA_SIZE + 1024) : NULL;
	pthread_create(&server->thread, NULL, serve, server);
}

static void server_stop(struct server *server)
{
	shutdown(server->fd, SHUT_RDWR); /* accept() returns */
	pthread_join(server->thread, NULL);
	close(server->fd);
	free(server->buffer);
}

static int connect_to(const char *ip, uint16_t port)
{
	struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, ip, &address.sin_addr);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval timeout = {20, 0}; /* a hang fails the check, not the run */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
	if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static struct relay_route route_to(uint16_t port, int family, uint16_t target_port)
{
	struct relay_route route;
	memset(&route, 0, sizeof route);
	inet_pton(AF_INET, ROUTED_IP, &route.ip);
	route.port = port;
	if (family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&route.target;
		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_loopback;
		in6->sin6_port = htons(target_port);
		route.target_length = sizeof *in6;
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&route.target;
		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		in->sin_port = htons(target_port);
		route.target_length = sizeof *in;
	}
	return route;
}

/* The one route 3000 -> `family` loopback:`port`, and a way in (which
 * nothing here can connect to; on a machine without vsock it is only
 * logged). */
static void route_only(int family, uint16_t port)
{
	struct relay_route route = route_to(ROUTED_PORT, family, port);
	struct relay_ingress ingress = {.vsock_port = vsock_base, .target_port = port};
	relay_set(&route, 1, &ingress, 1);
}

static void fill_random(char *data, size_t length, uint64_t seed)
{
	uint64_t x = seed | 1;
	for (size_t i = 0; i < length; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		data[i] = (char)(x >> 24);
	}
}

/* Sends `length` random bytes on `fd` (whose banner was read), shuts its
 * sending half, and expects them all back. */
static void check_echo(int fd, size_t length, uint64_t seed)
{
	char *sent = malloc(length), *back = malloc(length + 1);
	fill_random(sent, length, seed);
	CHECK(write_all(fd, sent, length));
	CHECK(shutdown(fd, SHUT_WR) == 0);
	ssize_t got = read_to_end(fd, back, length + 1);
	CHECKF(got == (ssize_t)length, "%zd bytes back of %zu", got, length);
	CHECK(got == (ssize_t)length && memcmp(sent, back, length) == 0);
	free(sent);
	free(back);
}

static char banner_of(int fd)
{
	char name = 0;
	return read(fd, &name, 1) == 1 ? name : 0;
}

/* A connection to the routed destination reaches the server named
 * `expected`, and bytes go through intact both ways. */
static void check_roundtrip(char expected, size_t length)
{
	int fd = connect_to(ROUTED_IP, ROUTED_PORT);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	char name = banner_of(fd);
	CHECKF(name == expected, "banner '%c', expected '%c'", name ? name : '?', expected);
	check_echo(fd, length, (uint64_t)length + (unsigned char)expected);
	close(fd);
}

/* The relay closes it: end of file (or a reset) soon, not a timeout. */
static void check_closed(uint16_t port)
{
	int fd = connect_to(ROUTED_IP, port);
	if (fd < 0)
		return; /* refused outright is closed as well */
	char byte;
	errno = 0;
	ssize_t n = read(fd, &byte, 1);
	CHECKF(n == 0 || (n < 0 && errno == ECONNRESET), "read gave %zd (%s)", n, strerror(errno));
	close(fd);
}

static void wait_for_no_connections(void)
{
	for (int i = 0; i < 500 && relay_connections_open(); i++)
		usleep(10000);
	CHECKF(relay_connections_open() == 0, "%u open", relay_connections_open());
}

/* relay_set() while a connection is open: that one keeps going to its
 * server, the next goes to the new one. */
static void check_swap(const struct server *v6, const struct server *v4)
{
	route_only(AF_INET6, v6->port);
	int first = connect_to(ROUTED_IP, ROUTED_PORT);
	CHECK(first >= 0 && banner_of(first) == v6->name);
	route_only(AF_INET, v4->port);
	check_roundtrip(v4->name, 64 * 1024);
	if (first >= 0) {
		check_echo(first, 1 << 20, 7);
		close(first);
	}
}

/* The relay's vsock listener on `port` ("socket:[inode]"; "" when there is
 * none): the relay is this process, so its sockets are among our fds.
 * Raw syscalls and a path: ThreadSanitizer would take a look at the relay
 * thread's fds from here for a race (the kernel makes it safe). */
static void vsock_listener(unsigned port, char *name, size_t size)
{
	name[0] = 0;
	for (int fd = 3; fd < 1024; fd++) {
		struct sockaddr_storage address;
		memset(&address, 0, sizeof address);
		const struct sockaddr_vm *vm = (const struct sockaddr_vm *)&address;
		socklen_t length = sizeof address;
		int listening = 0;
		socklen_t option_size = sizeof listening;
		if (syscall(SYS_getsockname, fd, &address, &length) != 0 ||
		    vm->svm_family != AF_VSOCK || vm->svm_port != port ||
		    syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_ACCEPTCONN, &listening,
			    &option_size) != 0 ||
		    !listening)
			continue;
		char path[64];
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(path, name, size - 1);
		name[n > 0 ? n : 0] = 0;
		return;
	}
}

/* The relay applies relay_set() on its thread: wait for it. */
static void wait_for_listener(unsigned port, bool present, char *name, size_t size)
{
	for (int i = 0; i < 500; i++) {
		vsock_listener(port, name, size);
		if ((name[0] != 0) == present)
			return;
		usleep(10000);
	}
}

static bool vsock_here(void)
{
	struct sockaddr_vm address = {
		.svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = vsock_base + 7};
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool bound = fd >= 0 && bind(fd, (struct sockaddr *)&address, sizeof address) == 0;
	if (fd >= 0)
		close(fd);
	return bound;
}

/* The ways in follow relay_set(); a listener whose port stays is the same
 * socket (its backlog and accepted connections undisturbed). Where vsock
 * cannot be listened on at all, there is nothing to see. */
static void check_ingress_listeners(void)
{
	if (!vsock_here()) {
		printf("no vsock here: the ingress listeners are not checked\n");
		return;
	}
	unsigned a = vsock_base + 1, b = vsock_base + 2;
	struct relay_ingress both[] = {{a, 1}, {b, 2}}, only_b[] = {{b, 3}};
	char first[64], second[64], now[64];
	relay_set(NULL, 0, both, 1);
	wait_for_listener(a, true, first, sizeof first);
	CHECK(first[0] != 0);
	relay_set(NULL, 0, both, 2);
	wait_for_listener(b, true, second, sizeof second);
	CHECK(second[0] != 0);
	vsock_listener(a, now, sizeof now);
	CHECKF(!strcmp(now, first), "a's listener was %s, now %s", first, now);
	relay_set(NULL, 0, only_b, 1);
	wait_for_listener(a, false, now, sizeof now);
	CHECK(now[0] == 0);
	vsock_listener(b, now, sizeof now);
	CHECKF(!strcmp(now, second), "b's listener was %s, now %s", second, now);
	relay_set(NULL, 0, NULL, 0);
	wait_for_listener(b, false, now, sizeof now);
	CHECK(now[0] == 0);
}

static double cpu_seconds(void)
{
	struct rusage usage;
	getrusage(RUSAGE_SELF, &usage);
	return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
	       (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

static int highest_fd(void)
{
	int highest = 0;
	DIR *folder = opendir("/proc/self/fd");
	for (struct dirent *entry; folder && (entry = readdir(folder));) {
		int fd = atoi(entry->d_name);
		highest = fd > highest ? fd : highest;
	}
	if (folder)
		closedir(folder);
	return highest;
}

/* Out of fds, the relay rests instead of failing accept at full speed, and
 * serves the peers waiting in its backlog once fds are free again. */
static void check_out_of_fds(const struct server *server)
{
	enum { PEERS = 3 };
	route_only(AF_INET, server->port);
	int peers[PEERS];
	for (int i = 0; i < PEERS; i++)
		peers[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct rlimit saved, tight;
	getrlimit(RLIMIT_NOFILE, &saved);
	tight = saved;
	tight.rlim_cur = (rlim_t)highest_fd() + 1;
	setrlimit(RLIMIT_NOFILE, &tight);
	int holes[1024], filled = 0; /* the fds closed below the highest */
	while (filled < 1024 && (holes[filled] = dup(0)) >= 0)
		filled++;
	struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(ROUTED_PORT)};
	inet_pton(AF_INET, ROUTED_IP, &address.sin_addr);
	for (int i = 0; i < PEERS; i++)
		CHECK(connect(peers[i], (struct sockaddr *)&address, sizeof address) == 0);
	double before = cpu_seconds();
	usleep(1000000);
	double spent = cpu_seconds() - before;
	CHECKF(spent < 0.25, "%.2f s of CPU in 1 s without fds", spent);
	while (filled > 0)
		close(holes[--filled]);
	setrlimit(RLIMIT_NOFILE, &saved);
	for (int i = 0; i < PEERS; i++) {
		struct timeval timeout = {20, 0};
		setsockopt(peers[i], SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
		CHECK(banner_of(peers[i]) == server->name);
		check_echo(peers[i], 1024, (uint64_t)i);
		close(peers[i]);
	}
}

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Connect, one small request, its answer, close: p50 and p99 in µs. */
static void measure_latency(const char *label, const char *ip, uint16_t port)
{
	enum { ROUNDS = 500 };
	static double took[ROUNDS];
	char request[32] = "GET / small request\n", answer[64];
	for (int i = 0; i < ROUNDS; i++) {
		double start = now_s();
		int fd = connect_to(ip, port);
		bool ok = fd >= 0 && banner_of(fd) && write_all(fd, request, sizeof request) &&
			  shutdown(fd, SHUT_WR) == 0 &&
			  read_to_end(fd, answer, sizeof answer) == sizeof request;
		took[i] = (now_s() - start) * 1e6;
		if (fd >= 0)
			close(fd);
		if (!ok) {
			CHECKF(ok, "%s: request %d failed", label, i);
			return;
		}
	}
	qsort(took, ROUNDS, sizeof *took, compare_doubles);
	printf("latency %-8s connect + request: p50 %.0f us, p99 %.0f us\n", label,
	       took[ROUNDS / 2], took[ROUNDS * 99 / 100]);
}

/* BULK_SIZE bytes to the sink; MB/s. */
static double measure_bulk(const char *ip, uint16_t port)
{
	static char chunk[1 << 20];
	fill_random(chunk, sizeof chunk, 99);
	double start = now_s();
	int fd = connect_to(ip, port);
	if (fd < 0)
		return 0;
	bool ok = true;
	for (uint64_t sent = 0; ok && sent < BULK_SIZE; sent += sizeof chunk)
		ok = write_all(fd, chunk, sizeof chunk);
	shutdown(fd, SHUT_WR);
	uint64_t counted = 0;
	ok = ok && read_to_end(fd, (char *)&counted, sizeof counted) == sizeof counted;
	double seconds = now_s() - start;
	close(fd);
	CHECKF(ok && counted == BULK_SIZE, "the sink counted %llu bytes",
	       (unsigned long long)counted);
	return (double)BULK_SIZE / 1e6 / seconds;
}

static void measure_throughput(const struct server *sink)
{
	route_only(AF_INET, sink->port);
	double straight = 0, relayed = 0;
	/* Best of three each, alternated: the machine's noise is large. */
	for (int i = 0; i < 3; i++) {
		double s = measure_bulk("127.0.0.1", sink->port);
		double r = measure_bulk(ROUTED_IP, ROUTED_PORT);
		straight = s > straight ? s : straight;
		relayed = r > relayed ? r : relayed;
	}
	printf("throughput 1 GiB: straight %.0f MB/s, through the relay %.0f MB/s (%.2fx)\n",
	       straight, relayed, straight > 0 ? relayed / straight : 0);
}

static size_t heap_in_use(void)
{
	struct mallinfo2 info = mallinfo2();
	return info.uordblks + info.hblkhd;
}

/* Connections through the relay that carry nothing hold no buffer: the
 * heap's growth for IDLE_CONNECTIONS of them, per connection. */
static void measure_idle_memory(void)
{
	uint16_t port;
	int target = listen_on(AF_INET, &port);
	route_only(AF_INET, port);
	static int clients[IDLE_CONNECTIONS], accepted[IDLE_CONNECTIONS];
	size_t before = heap_in_use();
	int made = 0;
	for (; made < IDLE_CONNECTIONS; made++) {
		clients[made] = connect_to(ROUTED_IP, ROUTED_PORT);
		accepted[made] = clients[made] >= 0 ? accept(target, NULL, NULL) : -1;
		if (accepted[made] < 0)
			break;
	}
	CHECKF(made == IDLE_CONNECTIONS, "%d idle connections made", made);
	usleep(200000); /* the relay's side of the last connects */
	CHECKF(relay_connections_open() == (unsigned)made, "%u open", relay_connections_open());
	size_t after = heap_in_use();
	if (before && made) /* mallinfo2() says nothing under the sanitizers */
		printf("memory: %d idle connections through the relay: %zd bytes of heap each\n",
		       made, ((ssize_t)after - (ssize_t)before) / made);
	for (int i = 0; i < made; i++) {
		close(clients[i]);
		close(accepted[i]);
	}
	if (made < IDLE_CONNECTIONS && clients[made] >= 0)
		close(clients[made]);
	close(target);
	wait_for_no_connections();
}

/* A network namespace of our own, where 198.18.0.2:3000 and :3001 lead to
 * the relay. */
static bool make_namespace(void)
{
	if (geteuid() != 0 || system("nft --version >/dev/null 2>&1") != 0 ||
	    unshare(CLONE_NEWNET) != 0)
		return false;
	return system("ip link set lo up && ip addr add 198.18.0.1/16 dev lo") == 0;
}

static bool add_dnat(uint16_t relay_port)
{
	char command[512];
	snprintf(command, sizeof command,
		 "nft add table ip t && "
		 "nft 'add chain ip t o { type nat hook output priority -110; }' && "
		 "nft add rule ip t o ip daddr " ROUTED_IP
		 " tcp dport '{ %d, %d }' dnat to 127.0.0.1:%u",
		 ROUTED_PORT, UNROUTED_PORT, relay_port);
	return system(command) == 0;
}

int main(void)
{
	if (!make_namespace()) {
		printf("test-relay: skipped (needs root, unshare and nft)\n");
		return SKIP;
	}
	vsock_base = 3000000000u + (unsigned)getpid() % 100000 * 8;
	unsigned cids[] = {2};
	uint16_t relay_port = 0;
	char error[256];
	if (!relay_start(cids, 1, &relay_port, error, sizeof error)) {
		fprintf(stderr, "relay_start: %s\n", error);
		return 1;
	}
	if (!add_dnat(relay_port)) {
		relay_stop();
		printf("test-relay: skipped (nft cannot add a nat rule here)\n");
		return SKIP;
	}
	struct server v6, v4, sink;
	server_start(&v6, AF_INET6, 'A', SERVER_STORE);
	server_start(&v4, AF_INET, 'B', SERVER_STORE);
	server_start(&sink, AF_INET, 'S', SERVER_SINK);

	route_only(AF_INET6, v6.port);
	check_roundtrip('A', DATA_SIZE);
	route_only(AF_INET, v4.port);
	check_roundtrip('B', DATA_SIZE);
	check_roundtrip('B', 1);
	check_closed(UNROUTED_PORT);
	check_swap(&v6, &v4);
	uint16_t nobody;
	close(listen_on(AF_INET, &nobody)); /* a port nothing listens on */
	route_only(AF_INET, nobody);
	check_closed(ROUTED_PORT);
	check_ingress_listeners();
	check_out_of_fds(&v4);
	wait_for_no_connections();
	CHECK(relay_ingress_open() == 0);
	CHECK(relay_last_ingress_ms() == 0);

	route_only(AF_INET, v4.port);
	measure_latency("straight", "127.0.0.1", v4.port);
	measure_latency("relay", ROUTED_IP, ROUTED_PORT);
	measure_idle_memory();
	measure_throughput(&sink);
	wait_for_no_connections();

	relay_stop();
	CHECK(relay_connections_open() == 0);
	server_stop(&v6);
	server_stop(&v4);
	server_stop(&sink);
	return check_done("relay");
}
