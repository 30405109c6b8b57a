/* test-ports: the pure parts of GET /v1/ports: /proc/PID/net/tcp lines,
 * container ids in /proc/PID/cgroup, and Docker's answer to GET
 * /containers/json (the box's Docker is tested in the booted box). */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ports-docker.h"
#include "ports-scan.h"

#include "check.h"

#define ID_A "4f1c0e7a9b2d3c4e5f60718293a4b5c6d7e8f90123456789abcdef0123456789"
#define ID_B "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_tcp_lines(void)
{
	struct listen_socket socket;
	/* The kernel prints each address word as the number it is in memory:
	 * on a little-endian machine 127.0.0.1 is 0100007F. */
	CHECK(ports_parse_tcp_line("   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 "
				   "00:00000000 00000000     0        0 31337 1 0000000000000000 "
				   "100 0 0 10 0",
				   AF_INET, &socket));
	CHECKF(socket.port == 8080 && !strcmp(socket.address, "127.0.0.1") &&
		       socket.inode == 31337 && socket.family == AF_INET,
	       "%u %s %lu", socket.port, socket.address, socket.inode);
	CHECK(ports_parse_tcp_line("   1: 00000000:0050 00000000:0000 0A 00000000:00000000 "
				   "00:00000000 00000000     0        0 7 1 0 100 0 0 10 0",
				   AF_INET, &socket) &&
	      socket.port == 80 && !strcmp(socket.address, "0.0.0.0"));
	/* An established connection and the header are not listeners. */
	CHECK(!ports_parse_tcp_line("   2: 0100007F:1F90 0100007F:C350 01 00000000:00000000 "
				    "00:00000000 00000000     0        0 99 1 0 20 4 30 10 -1",
				    AF_INET, &socket));
	CHECK(!ports_parse_tcp_line("  sl  local_address rem_address   st tx_queue rx_queue tr "
				    "tm->when retrnsmt   uid  timeout inode",
				    AF_INET, &socket));
	CHECK(!ports_parse_tcp_line("", AF_INET, &socket));
	CHECK(ports_parse_tcp_line("   0: 00000000000000000000000001000000:0BB8 "
				   "00000000000000000000000000000000:0000 0A 00000000:00000000 "
				   "00:00000000 00000000  1000        0 4242 1 0 100 0 0 10 0",
				   AF_INET6, &socket) &&
	      socket.port == 3000 && !strcmp(socket.address, "::1") && socket.inode == 4242);
	CHECK(ports_parse_tcp_line("   0: 00000000000000000000000000000000:1F90 "
				   "00000000000000000000000000000000:0000 0A 00000000:00000000 "
				   "00:00000000 00000000     0        0 5 1 0 100 0 0 10 0",
				   AF_INET6, &socket) &&
	      !strcmp(socket.address, "::"));
	/* An IPv4 address in the tcp6 file's format is refused, not misread. */
	CHECK(!ports_parse_tcp_line("   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 "
				    "00:00000000 00000000     0        0 1 1 0 100 0 0 10 0",
				    AF_INET6, &socket));
}

static void test_cgroups(void)
{
	char id[PORTS_CONTAINER_ID_LENGTH + 1];
	CHECK(ports_container_of_cgroup("0::/system.slice/docker-" ID_A ".scope\n", id) &&
	      !strcmp(id, ID_A));
	/* A cgroup the container made below its own still names it. */
	CHECK(ports_container_of_cgroup("0::/system.slice/docker-" ID_A ".scope/init.scope\n",
					id) &&
	      !strcmp(id, ID_A));
	/* cgroupfs's driver, on a v1 line of a hybrid host. */
	CHECK(ports_container_of_cgroup("12:pids:/docker/" ID_B "\n0::/\n", id) &&
	      !strcmp(id, ID_B));
	CHECK(!ports_container_of_cgroup("0::/system.slice/ssh.service\n", id));
	CHECK(!ports_container_of_cgroup("0::/" ID_B "\n", id));
	CHECK(!ports_container_of_cgroup("0::/system.slice/docker-abc.scope\n", id));
	CHECK(!ports_container_of_cgroup("0::/system.slice/docker.service\n", id));
	CHECK(!ports_container_of_cgroup("", id));
}

static void test_docker_answer(void)
{
	static const char answer[] =
		"HTTP/1.0 200 OK\r\nApi-Version: 1.47\r\nContent-Type: application/json\r\n"
		"Date: Mon, 01 Jan 2024 00:00:00 GMT\r\n\r\n"
		"[{\"Id\":\"" ID_A "\",\"Names\":[\"/web\"],\"Ports\":["
		"{\"IP\":\"0.0.0.0\",\"PrivatePort\":80,\"PublicPort\":8080,\"Type\":\"tcp\"},"
		"{\"IP\":\"::\",\"PrivatePort\":80,\"PublicPort\":8080,\"Type\":\"tcp\"},"
		"{\"PrivatePort\":443,\"Type\":\"tcp\"},"
		"{\"IP\":\"0.0.0.0\",\"PrivatePort\":53,\"PublicPort\":5353,\"Type\":\"udp\"}]},"
		"{\"Id\":\"" ID_B "\",\"Names\":[\"/db\"],\"Ports\":[]},"
		"{\"Id\":\"not-an-id\",\"Names\":[\"/odd\"]}]\n";
	struct docker_containers containers;
	CHECK(ports_docker_parse(answer, sizeof answer - 1, &containers));
	CHECKF(containers.count == 2, "%zu containers", containers.count);
	const struct docker_container *web = ports_docker_find(&containers, ID_A);
	CHECK(web && !strcmp(web->name, "web"));
	CHECK(ports_docker_host_port(web, 80) == 8080);
	CHECK(ports_docker_host_port(web, 443) == 0); /* exposed, not published */
	CHECK(ports_docker_host_port(web, 53) == 0);  /* udp */
	const struct docker_container *db = ports_docker_find(&containers, ID_B);
	CHECK(db && !strcmp(db->name, "db") && ports_docker_host_port(db, 5432) == 0);
	CHECK(!ports_docker_find(&containers, "nope"));
	ports_docker_free(&containers);

	/* Content-Length bounds the body; an error status or chunks are refused. */
	static const char sized[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]garbage";
	CHECK(ports_docker_parse(sized, sizeof sized - 1, &containers) && containers.count == 0);
	ports_docker_free(&containers);
	static const char failed[] = "HTTP/1.0 500 Internal Server Error\r\n\r\n[]";
	CHECK(!ports_docker_parse(failed, sizeof failed - 1, &containers));
	static const char chunked[] =
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\n0\r\n\r\n";
	CHECK(!ports_docker_parse(chunked, sizeof chunked - 1, &containers));
	static const char cut[] = "HTTP/1.0 200 OK\r\n\r\n[{\"Id\":";
	CHECK(!ports_docker_parse(cut, sizeof cut - 1, &containers));
	CHECK(!ports_docker_parse("HTTP/1.0 200 OK\r\n", 17, &containers));
	CHECK(!ports_docker_parse(NULL, 0, &containers));
}

int main(void)
{
	test_tcp_lines();
	test_cgroups();
	test_docker_answer();
	return check_done("ports");
}
