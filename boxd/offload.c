#include "offload.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "boxd.h"
#include "log.h"
#include "xalloc.h"

struct offload {
	void (*work)(void *arg);
	void (*done)(void *arg);
	void *arg;
	int wake_fd;
};

static void on_finished(evutil_socket_t fd, short events, void *data)
{
	struct offload *job = data;
	close(job->wake_fd);
	job->done(job->arg);
	free(job);
}

static void *run_thread(void *data)
{
	struct offload *job = data;
	job->work(job->arg);
	uint64_t one = 1;
	(void)!write(job->wake_fd, &one, sizeof one);
	return NULL;
}

bool offload_run(void (*work)(void *arg), void (*done)(void *arg), void *arg)
{
	struct offload *job = xmalloc(sizeof *job);
	*job = (struct offload){.work = work, .done = done, .arg = arg};
	job->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (job->wake_fd < 0 ||
	    event_base_once(boxd_base(), job->wake_fd, EV_READ, on_finished, job, NULL) < 0) {
		log_msg(LOG_LEVEL_ERROR, "offload: cannot watch a worker thread");
		if (job->wake_fd >= 0)
			close(job->wake_fd);
		free(job);
		return false;
	}
	pthread_attr_t attributes;
	pthread_attr_init(&attributes);
	pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attributes, 256 * 1024);
	pthread_t thread;
	int status = pthread_create(&thread, &attributes, run_thread, job);
	pthread_attr_destroy(&attributes);
	if (status != 0) {
		/* Out of threads: late is better than never; the loop waits this once. */
		log_msg(LOG_LEVEL_WARNING, "offload: no worker thread; running on the loop");
		run_thread(job);
	}
	return true;
}
