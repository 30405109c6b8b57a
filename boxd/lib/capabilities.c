/* capabilities.c: drop boxd's capabilities to those it uses (see
 * capabilities.h for the set and why the bounding set stays full). */
#include "capabilities.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>

/* What boxd itself does with privilege:
 * CAP_CHOWN, CAP_FOWNER: uploads keep modes and ownership over files of any user;
 * CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH: sync, files and logs reach any
 *   user's files under the work dir;
 * CAP_KILL: stop commands running as other users;
 * CAP_SETUID, CAP_SETGID: forked workers may switch to an unprivileged user;
 * CAP_NET_BIND_SERVICE: a --vsock-port below 1024;
 * CAP_SYS_TIME: POST /v1/init sets the clock of a box thawed behind time;
 * CAP_SYS_PTRACE: GET /v1/ports names the process behind each port, which
 *   takes reading the fd links (/proc/PID/fd) of processes with more
 *   capabilities than boxd's (every root daemon, every root command). */
static const cap_value_t CAPABILITIES_KEPT[] = {
	CAP_CHOWN,  CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,  CAP_FOWNER,   CAP_KILL,
	CAP_SETUID, CAP_SETGID,       CAP_NET_BIND_SERVICE, CAP_SYS_TIME, CAP_SYS_PTRACE,
};
#define KEPT_COUNT ((int)(sizeof CAPABILITIES_KEPT / sizeof CAPABILITIES_KEPT[0]))

bool capabilities_drop(char *error, size_t size)
{
	cap_t now = cap_get_proc();
	cap_t wanted = cap_init();
	bool ok = now && wanted;
	for (int i = 0; ok && i < KEPT_COUNT; i++) {
		/* Keep a capability only where boxd has it now: never ask for more. */
		cap_flag_value_t permitted = CAP_CLEAR;
		cap_get_flag(now, CAPABILITIES_KEPT[i], CAP_PERMITTED, &permitted);
		if (permitted != CAP_SET)
			continue;
		ok = cap_set_flag(wanted, CAP_PERMITTED, 1, &CAPABILITIES_KEPT[i], CAP_SET) == 0 &&
		     cap_set_flag(wanted, CAP_EFFECTIVE, 1, &CAPABILITIES_KEPT[i], CAP_SET) == 0;
	}
	if (ok && cap_set_proc(wanted) != 0) {
		snprintf(error, size, "cannot drop capabilities: %s", strerror(errno));
		ok = false;
	} else if (!ok) {
		snprintf(error, size, "cannot read capabilities: %s", strerror(errno));
	}
	cap_free(now);
	cap_free(wanted);
	return ok;
}

void capabilities_describe(char *buffer, size_t size)
{
	cap_t caps = cap_init();
	if (caps) {
		cap_set_flag(caps, CAP_PERMITTED, KEPT_COUNT, CAPABILITIES_KEPT, CAP_SET);
		cap_set_flag(caps, CAP_EFFECTIVE, KEPT_COUNT, CAPABILITIES_KEPT, CAP_SET);
	}
	char *text = caps ? cap_to_text(caps, NULL) : NULL;
	snprintf(buffer, size, "%s", text ? text : "?");
	cap_free(text);
	cap_free(caps);
}
