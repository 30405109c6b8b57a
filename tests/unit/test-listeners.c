/* The peer checks, and the accept4 hook that applies them: a real unix
 * listener with real connections, and the vsock policy as a unit (these
 * machines have no vsock loopback transport). */
#include <errno.h>
#include <linux/vm_sockets.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "http/listeners.h"

static int connect_to(const char *path)
{
	struct sockaddr_un address = {.sun_family = AF_UNIX};
	strcpy(address.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void check_policies(void)
{
	unsigned cids[] = {2, 7};
	CHECK(listeners_cid_allowed(2, cids, 2));
	CHECK(listeners_cid_allowed(7, cids, 2));
	CHECK(!listeners_cid_allowed(3, cids, 2));
	CHECK(!listeners_cid_allowed(2, cids, 0));
	CHECK(listeners_uid_allowed(0, 1000));
	CHECK(listeners_uid_allowed(1000, 1000));
	CHECK(!listeners_uid_allowed(65534, 1000));
}

/* The hook lets an allowed peer through and names it so getnameinfo works. */
static void check_unix_accept(const char *path)
{
	char error[256];
	int listener = listeners_open_unix(path, error, sizeof error);
	CHECK(listener >= 0);
	listeners_guard_unix(listener);
	int client = connect_to(path);
	CHECK(client >= 0);
	struct sockaddr_storage peer;
	socklen_t length = sizeof peer;
	int accepted = accept4(listener, (struct sockaddr *)&peer, &length, SOCK_CLOEXEC);
	CHECK(accepted >= 0);
	CHECK(peer.ss_family == AF_UNIX);
	char host[256], service[256];
	CHECK(getnameinfo((struct sockaddr *)&peer, length, host, sizeof host, service, sizeof service,
			  NI_NUMERICHOST | NI_NUMERICSERV) == 0);
	close(accepted);
	close(client);

	/* A peer of another uid is closed at accept; the hook then reports EAGAIN. */
	if (geteuid() == 0) {
		/* Let the kernel admit the peer, so that boxd's own check is what refuses. */
		chmod(path, 0666);
		pid_t child = fork();
		if (child == 0) {
			if (setuid(65534) != 0)
				_exit(3);
			int fd = connect_to(path);
			if (fd < 0)
				_exit(4);
			char byte;
			_exit(read(fd, &byte, 1) == 0 ? 0 : 5);
		}
		int status;
		usleep(100000);
		int refused = accept4(listener, NULL, NULL, SOCK_NONBLOCK);
		CHECK(refused < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
		waitpid(child, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	/* A second boxd must not steal a live socket. */
	CHECK(listeners_open_unix(path, error, sizeof error) < 0 && strstr(error, "already serving"));
	listeners_unguard(listener);
	close(listener);
	unlink(path);
}

/* Not a socket at the path: a clear refusal, nothing removed. */
static void check_not_a_socket(const char *path)
{
	FILE *file = fopen(path, "w");
	fclose(file);
	char error[256];
	CHECK(listeners_open_unix(path, error, sizeof error) < 0 && strstr(error, "not a socket"));
	CHECK(access(path, F_OK) == 0);
	unlink(path);
}

/* glibc cannot name an AF_VSOCK address, the reason evhttp must never see
 * one; what boxd shows it instead can be named, as evhttp 2.1 does it. */
static void check_vsock_names(void)
{
	struct sockaddr_storage peer;
	memset(&peer, 0, sizeof peer);
	struct sockaddr_vm *vm = (struct sockaddr_vm *)&peer;
	vm->svm_family = AF_VSOCK;
	vm->svm_cid = 2;
	vm->svm_port = 51234;
	char host[64], service[64];
	CHECK(getnameinfo((struct sockaddr *)vm, sizeof *vm, host, sizeof host, service, sizeof service,
			  NI_NUMERICHOST | NI_NUMERICSERV) != 0);

	struct sockaddr_storage shown;
	memset(&shown, 0xff, sizeof shown);
	socklen_t shown_length = sizeof shown;
	listeners_present_peer(&peer, sizeof *vm, (struct sockaddr *)&shown, &shown_length);
	CHECK(shown.ss_family == AF_UNIX);
	/* libevent 2.1's bufferevent_socket_set_conn_address_ asserts this. */
	CHECK(shown_length <= sizeof(struct sockaddr_in6));
	struct sockaddr_un *as_unix = (struct sockaddr_un *)&shown;
	CHECK(as_unix->sun_path[0] == '\0');
	CHECK(getnameinfo((struct sockaddr *)&shown, shown_length, host, sizeof host, service,
			  sizeof service, NI_NUMERICHOST | NI_NUMERICSERV) == 0);

	/* A short buffer gets what fits and the full length, as accept4 does. */
	char tiny[1];
	socklen_t tiny_length = sizeof tiny;
	listeners_present_peer(&peer, sizeof *vm, (struct sockaddr *)tiny, &tiny_length);
	CHECK(tiny_length == sizeof(sa_family_t));
}

int main(void)
{
	char dir[] = "/tmp/boxd-listeners-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	chmod(dir, 0755);
	char path[128];
	snprintf(path, sizeof path, "%s/boxd.sock", dir);
	check_policies();
	check_unix_accept(path);
	check_not_a_socket(path);
	check_vsock_names();
	rmdir(dir);
	return check_done("listeners");
}
