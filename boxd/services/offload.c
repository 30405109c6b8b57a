/* offload.c: a thread per piece of work, a pipe to wake the loop (offload.h). */
#include "offload.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "xalloc.h"

struct offload {
	pthread_t thread;
	int wake[2];
	struct event *woken;
	void (*work)(void *arg);
	void (*done)(void *arg);
	void *arg;
};

static void *run(void *data)
{
	struct offload *job = data;
	job->work(job->arg);
	char done = 1;
	while (write(job->wake[1], &done, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static void on_woken(evutil_socket_t fd, short what, void *data)
{
	(void)what;
	struct offload *job = data;
	char done;
	if (read(fd, &done, 1) != 1)
		return; /* not yet (a spurious wakeup): the event stays armed */
	pthread_join(job->thread, NULL);
	event_free(job->woken);
	close(job->wake[0]);
	close(job->wake[1]);
	void (*finish)(void *) = job->done;
	void *arg = job->arg;
	free(job);
	finish(arg);
}

/* False with errno when no thread could start (nothing ran). */
static bool start_thread(struct event_base *base, void (*work)(void *arg), void (*done)(void *arg),
			 void *arg)
{
	struct offload *job = xcalloc(1, sizeof *job);
	*job = (struct offload){.work = work, .done = done, .arg = arg};
	if (pipe2(job->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		free(job);
		return false;
	}
	job->woken = event_new(base, job->wake[0], EV_READ | EV_PERSIST, on_woken, job);
	event_add(job->woken, NULL);
	/* The thread takes no signal: they stay the loop's (libevent's). */
	sigset_t all, before;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &before);
	int error = pthread_create(&job->thread, NULL, run, job);
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	if (error) {
		event_free(job->woken);
		close(job->wake[0]);
		close(job->wake[1]);
		free(job);
		errno = error;
		return false;
	}
	return true;
}

void offload_run(struct event_base *base, const char *what, void (*work)(void *arg),
		 void (*done)(void *arg), void *arg)
{
	if (start_thread(base, work, done, arg))
		return;
	log_msg(LOG_LEVEL_WARNING, "%s: no thread (%s): it runs on the loop", what,
		strerror(errno));
	work(arg);
	done(arg);
}
