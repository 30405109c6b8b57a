#include "notify.h"

#include <errno.h>
#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"

static int notify_fd = -1;
static struct event_base *loop; /* given at notify_init */

static void notify_setup(void);
static struct sockaddr_un notify_address;
static socklen_t notify_length;
static struct event *watchdog_timer;

void notify_send(const char *fmt, ...)
{
	if (notify_fd < 0)
		return;
	char message[512];
	va_list ap;
	va_start(ap, fmt);
	int length = vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	if (length < 0)
		return;
	if ((size_t)length >= sizeof message)
		length = sizeof message - 1;
	if (sendto(notify_fd, message, (size_t)length, MSG_NOSIGNAL,
		   (struct sockaddr *)&notify_address, notify_length) < 0)
		log_msg(LOG_LEVEL_WARNING, "cannot notify systemd: %s", strerror(errno));
}

static void (*watchdog_tick)(void);

void notify_on_watchdog(void (*tick)(void))
{
	watchdog_tick = tick;
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	if (watchdog_tick)
		watchdog_tick();
	notify_send("WATCHDOG=1");
}

/* WATCHDOG_PID, when set, names the process the watchdog is meant for. */
static long watchdog_interval_usec(void)
{
	const char *usec = getenv("WATCHDOG_USEC");
	const char *pid = getenv("WATCHDOG_PID");
	if (!usec || (pid && atol(pid) != (long)getpid()))
		return 0;
	long value = atol(usec);
	return value > 0 ? value : 0;
}

static void start_watchdog(void)
{
	long interval = watchdog_interval_usec();
	if (!interval)
		return;
	long half = interval / 2;
	struct timeval period = {half / 1000000, half % 1000000};
	watchdog_timer = event_new(loop, -1, EV_PERSIST, on_watchdog, NULL);
	event_add(watchdog_timer, &period);
	log_msg(LOG_LEVEL_INFO, "pinging the systemd watchdog every %ld ms", half / 1000);
}

/* Commands inherit boxd's environment: systemd's variables are for boxd
 * alone, so they go once read (a command pinging boxd's watchdog would hide
 * a hung boxd). */
static void forget_environment(void)
{
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

void notify_init(struct event_base *base)
{
	loop = base;
	notify_setup();
	forget_environment();
}

static void notify_setup(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || !*path || (path[0] != '/' && path[0] != '@'))
		return;
	size_t length = strlen(path);
	if (length >= sizeof notify_address.sun_path) {
		log_msg(LOG_LEVEL_WARNING, "NOTIFY_SOCKET is too long; not notifying systemd");
		return;
	}
	memset(&notify_address, 0, sizeof notify_address);
	notify_address.sun_family = AF_UNIX;
	memcpy(notify_address.sun_path, path, length);
	if (path[0] == '@')
		notify_address.sun_path[0] = '\0';
	notify_length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length);
	notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (notify_fd < 0) {
		log_msg(LOG_LEVEL_WARNING, "cannot create the systemd notify socket: %s",
			strerror(errno));
		return;
	}
	start_watchdog();
}

void notify_stop(void)
{
	if (watchdog_timer) {
		event_free(watchdog_timer);
		watchdog_timer = NULL;
	}
	if (notify_fd >= 0) {
		close(notify_fd);
		notify_fd = -1;
	}
}
