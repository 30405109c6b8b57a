#include "proc-events.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capabilities.h"
#include "clock.h"
#include "log.h"

#define COMMAND_MAX 1000
/* Forks remembered so that an exec whose program ended before /proc was read
 * still has a parent: the latest ones, overwritten in turn. */
#define FORKS_KEPT 1024

static struct {
	int fd;
	struct event *readable;
	proc_exec_fn fn;
	void *arg;
	struct {
		pid_t child, parent;
	} forks[FORKS_KEPT];
	unsigned next_fork;
	bool refused; /* the kernel answered the listen with an error */
	bool heard;   /* the fork made to check came, with boxd's own pid */
} listen_state = {.fd = -1};

/* Reads a small /proc file whole into `buffer` (NUL-ended); its length, or
 * -1 when it is gone. */
static ssize_t read_proc(pid_t pid, const char *name, char *buffer, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t total = 0, got = 0;
	while ((size_t)total < size - 1 &&
	       (got = read(fd, buffer + total, size - 1 - (size_t)total)) > 0)
		total += got;
	close(fd);
	buffer[total] = 0;
	return got < 0 ? -1 : total;
}

/* From /proc/PID/stat: the parent, the session and the terminal. The name
 * (field 2) may hold spaces and parentheses: the fields after it start after
 * its last ')'. */
static bool read_stat(pid_t pid, pid_t *parent, pid_t *session, int *tty)
{
	char text[1024];
	if (read_proc(pid, "stat", text, sizeof text) <= 0)
		return false;
	const char *after = strrchr(text, ')');
	char state;
	int ppid, pgrp, sid;
	if (!after || sscanf(after + 1, " %c %d %d %d %d", &state, &ppid, &pgrp, &sid, tty) != 5)
		return false;
	*parent = ppid;
	*session = sid;
	return true;
}

static pid_t remembered_parent(pid_t child)
{
	for (unsigned i = 0; i < FORKS_KEPT; i++)
		if (listen_state.forks[i].child == child)
			return listen_state.forks[i].parent;
	return 0;
}

static void remember_fork(pid_t child, pid_t parent)
{
	listen_state.forks[listen_state.next_fork].child = child;
	listen_state.forks[listen_state.next_fork].parent = parent;
	listen_state.next_fork = (listen_state.next_fork + 1) % FORKS_KEPT;
}

/* The arguments, NULs made spaces, cut at COMMAND_MAX; false when gone or
 * empty (a kernel thread). */
static bool read_command(pid_t pid, char *command, size_t size)
{
	ssize_t length = read_proc(pid, "cmdline", command, size);
	if (length <= 0)
		return false;
	while (length > 0 && command[length - 1] == 0)
		length--;
	for (ssize_t i = 0; i < length; i++)
		if (command[i] == 0)
			command[i] = ' ';
	command[length] = 0;
	return length > 0;
}

/* A boxd command's id from the process's cgroup path: a component such as
 * "c_0123456789abcdef" (exec's ids name their cgroups). */
static bool read_job_id(pid_t pid, char *id, size_t size)
{
	char text[2048];
	if (read_proc(pid, "cgroup", text, sizeof text) <= 0)
		return false;
	for (char *at = text; (at = strpbrk(at, "/")); at++) {
		const char *name = at + 1;
		size_t length = strcspn(name, "/\n");
		if (length == 18 && (name[0] == 'c' || name[0] == 'b') && name[1] == '_' &&
		    strspn(name + 2, "0123456789abcdef") >= 16 && length < size) {
			memcpy(id, name, length);
			id[length] = 0;
			return true;
		}
	}
	return false;
}

/* A terminal's name from its device number (Linux's fixed majors: 4 for
 * the consoles, 136 to 143 for the pseudo-terminals). */
static void terminal_name(int tty, char *name, size_t size)
{
	unsigned major = ((unsigned)tty >> 8) & 0xfff;
	unsigned minor = ((unsigned)tty & 0xff) | (((unsigned)tty >> 12) & 0xfff00);
	if (major >= 136 && major <= 143)
		snprintf(name, size, "pts/%u", (major - 136) * 256 + minor);
	else if (major == 4 && minor < 64)
		snprintf(name, size, "tty%u", minor);
	else
		snprintf(name, size, "%u:%u", major, minor);
}

static void on_exec(pid_t pid)
{
	char command[COMMAND_MAX + 1], id[32];
	pid_t parent = 0, session, parent_session;
	int tty = 0, parent_tty = 0;
	bool known = read_command(pid, command, sizeof command);
	if (!read_stat(pid, &parent, &session, &tty))
		parent = remembered_parent(pid);
	struct proc_exec exec = {
		.pid = pid,
		.parent = parent,
		.at_ms = clock_now_ms(),
		.command = known ? command : NULL,
		.job_id = read_job_id(pid, id, sizeof id) ? id : NULL,
	};
	pid_t grandparent;
	char terminal[32];
	if (parent > 1 && read_stat(parent, &grandparent, &parent_session, &parent_tty) &&
	    parent_session == parent && parent_tty != 0) {
		exec.parent_at_prompt = true;
		terminal_name(parent_tty, terminal, sizeof terminal);
		exec.terminal = terminal;
	}
	listen_state.fn(listen_state.arg, &exec);
}

static void on_event(const struct proc_event *event)
{
	switch (event->what) {
	case PROC_EVENT_FORK:
		/* boxd's own fork, by the pid boxd knows itself by: events in
		 * another pid namespace's numbers are no use to it. */
		if (event->event_data.fork.parent_tgid == getpid())
			listen_state.heard = true;
		if (event->event_data.fork.child_pid == event->event_data.fork.child_tgid)
			remember_fork(event->event_data.fork.child_tgid,
				      event->event_data.fork.parent_tgid);
		break;
	case PROC_EVENT_EXEC: on_exec(event->event_data.exec.process_tgid); break;
	case PROC_EVENT_NONE:
		/* The answer to the listen: an error when the kernel refused. */
		if (event->event_data.ack.err) {
			listen_state.refused = true;
			log_msg(LOG_LEVEL_WARNING, "the kernel refused its process events: %s",
				strerror((int)event->event_data.ack.err));
		}
		break;
	default: break;
	}
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	(void)arg;
	/* Aligned for the netlink headers read in place. */
	char buffer[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	for (int rounds = 0; rounds < 64; rounds++) {
		ssize_t got = recv(fd, buffer, sizeof buffer, 0);
		if (got < 0) {
			if (errno == ENOBUFS)
				log_msg(LOG_LEVEL_WARNING, "process events: the kernel dropped "
							   "some (too many at once)");
			return;
		}
		for (struct nlmsghdr *header = (struct nlmsghdr *)buffer;
		     NLMSG_OK(header, (size_t)got); header = NLMSG_NEXT(header, got)) {
			if (header->nlmsg_type != NLMSG_DONE)
				continue;
			const struct cn_msg *message = NLMSG_DATA(header);
			if (message->id.idx != CN_IDX_PROC || message->id.val != CN_VAL_PROC ||
			    message->len < sizeof(struct proc_event))
				continue;
			/* The event sits 4-aligned after the headers; its
			 * timestamp wants 8. */
			struct proc_event event;
			memcpy(&event, message->data, sizeof event);
			on_event(&event);
		}
	}
}

/* Asks the kernel to start (or stop) multicasting process events here. */
static bool send_op(int fd, enum proc_cn_mcast_op op)
{
	/* nlmsghdr, then cn_msg (its data is a flexible member), then the op. */
	enum { LENGTH = NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(enum proc_cn_mcast_op)) };
	char buffer[LENGTH] __attribute__((aligned(NLMSG_ALIGNTO))) = {0};
	struct nlmsghdr *header = (struct nlmsghdr *)buffer;
	header->nlmsg_len = LENGTH;
	header->nlmsg_type = NLMSG_DONE;
	header->nlmsg_pid = (__u32)getpid();
	struct cn_msg *message = NLMSG_DATA(header);
	message->id.idx = CN_IDX_PROC;
	message->id.val = CN_VAL_PROC;
	message->len = sizeof op;
	memcpy(message->data, &op, sizeof op);
	return send(fd, buffer, LENGTH, MSG_NOSIGNAL) == LENGTH;
}

/* The kernel takes no listen from outside the machine's first pid and user
 * namespaces (a container, a chroot under unshare), nor, before 6.6, from one
 * without the capability; it says nothing when nobody else listens, and
 * when another does (a count a killed listener never gives back), its
 * events come in pids of the first namespace, which name other processes
 * here or none. So boxd forks once (the child ends at once): a listener
 * that does not hear that fork by boxd's own pid hears nothing of use. */
static void make_an_event(void)
{
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	if (child > 0)
		waitpid(child, NULL, 0);
}

bool proc_events_start(struct event_base *base, proc_exec_fn fn, void *arg, char *why,
		       size_t why_size)
{
	if (listen_state.fd >= 0)
		return true;
	/* Before 6.6 the kernel checks CAP_NET_ADMIN on the listen twice: in
	 * the sender and in the credentials the socket was opened with; and it
	 * refuses in silence when nobody else listens (else its answer says
	 * EPERM, heard as `refused`). So the socket is opened with it raised.
	 * Without the capability permitted (boxd not root) it is tried as is. */
	bool raised = capabilities_raise(CAP_NET_ADMIN, true);
	int fd = socket(PF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR);
	struct sockaddr_nl address = {.nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC};
	bool listening = fd >= 0 && bind(fd, (struct sockaddr *)&address, sizeof address) == 0 &&
			 send_op(fd, PROC_CN_MCAST_LISTEN);
	int saved = errno;
	if (raised)
		capabilities_raise(CAP_NET_ADMIN, false);
	if (!listening) {
		snprintf(why, why_size, "the kernel's process events are not open to boxd: %s",
			 strerror(saved));
		if (fd >= 0)
			close(fd);
		return false;
	}
	listen_state.fd = fd;
	listen_state.fn = fn;
	listen_state.arg = arg;
	listen_state.refused = listen_state.heard = false;
	memset(listen_state.forks, 0, sizeof listen_state.forks);
	listen_state.readable = event_new(base, fd, EV_READ | EV_PERSIST, on_readable, NULL);
	event_add(listen_state.readable, NULL);
	make_an_event();
	return true;
}

bool proc_events_refused(void)
{
	if (listen_state.fd >= 0)
		on_readable(listen_state.fd, EV_READ, NULL); /* what is queued */
	return listen_state.refused || !listen_state.heard;
}

void proc_events_stop(void)
{
	if (listen_state.fd < 0)
		return;
	/* The kernel counts its listeners, and sends events to everyone
	 * while any is counted: this must be heard (the same check as the
	 * listen's). */
	bool raised = capabilities_raise(CAP_NET_ADMIN, true);
	send_op(listen_state.fd, PROC_CN_MCAST_IGNORE);
	if (raised)
		capabilities_raise(CAP_NET_ADMIN, false);
	event_free(listen_state.readable);
	close(listen_state.fd);
	listen_state.fd = -1;
	listen_state.readable = NULL;
}
