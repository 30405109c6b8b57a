/* The peer checks at accept: a real unix listener with real connections,
 * and the vsock policy as a unit (these machines have no vsock loopback
 * transport). */
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
#include "listeners.h"

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

/* An allowed peer passes the check; one of another uid is refused. */
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
	CHECK(listeners_peer_allowed(listener, accepted, (struct sockaddr *)&peer, length));
	close(accepted);
	close(client);

	if (geteuid() == 0) {
		/* Let the kernel admit the peer, so that boxd's own check is what refuses. */
		chmod(path, 0666);
		pid_t child = fork();
		if (child == 0) {
			if (setuid(65534) != 0)
				_exit(3);
			int fd = connect_to(path);
			_exit(fd < 0 ? 4 : 0);
		}
		int status;
		waitpid(child, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		length = sizeof peer;
		accepted = accept4(listener, (struct sockaddr *)&peer, &length, SOCK_CLOEXEC);
		CHECK(accepted >= 0);
		CHECK(!listeners_peer_allowed(listener, accepted, (struct sockaddr *)&peer,
					      length));
		close(accepted);
	}
	/* An unguarded listener admits nobody. */
	listeners_unguard(listener);
	client = connect_to(path);
	length = sizeof peer;
	accepted = accept4(listener, (struct sockaddr *)&peer, &length, SOCK_CLOEXEC);
	CHECK(accepted >= 0);
	CHECK(!listeners_peer_allowed(listener, accepted, (struct sockaddr *)&peer, length));
	close(accepted);
	close(client);
	/* A second boxd must not steal a live socket. */
	CHECK(listeners_open_unix(path, error, sizeof error) < 0 &&
	      strstr(error, "already serving"));
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

/* A vsock peer is checked by its CID, from the address accept gives
 * (no vsock loopback here: the address is made up, the listener is a
 * stand-in fd). */
static void check_vsock_peers(void)
{
	int stand_in = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unsigned allowed[] = {2, 7};
	listeners_guard_vsock(stand_in, allowed, 2);
	struct sockaddr_vm vm = {.svm_family = AF_VSOCK, .svm_cid = 2, .svm_port = 51234};
	CHECK(listeners_peer_allowed(stand_in, -1, (struct sockaddr *)&vm, sizeof vm));
	vm.svm_cid = 7;
	CHECK(listeners_peer_allowed(stand_in, -1, (struct sockaddr *)&vm, sizeof vm));
	vm.svm_cid = 3;
	CHECK(!listeners_peer_allowed(stand_in, -1, (struct sockaddr *)&vm, sizeof vm));
	struct sockaddr_un other = {.sun_family = AF_UNIX};
	CHECK(!listeners_peer_allowed(stand_in, -1, (struct sockaddr *)&other, sizeof other));
	listeners_unguard(stand_in);
	close(stand_in);
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
	check_vsock_peers();
	rmdir(dir);
	return check_done("listeners");
}
