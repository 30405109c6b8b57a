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

/* Kept permitted but not effective: raised for one system call and lowered
 * again (capabilities_raise), so no other code path of boxd acts with it.
 * CAP_SYS_ADMIN: an init's entropy, credited to the kernel's pool and the
 * random generator reseeded (RNDADDENTROPY, RNDRESEEDCRNG), which the
 * kernel allows only with it.
 * CAP_NET_ADMIN: listening to the kernel's process events while a person has
 * the screen (proc-events.c), which kernels before 6.6 allow only with it.
 * Every program boxd starts is exec'd by root and gets the bounding set
 * anyway, so these add nothing to theirs. */
static const cap_value_t CAPABILITIES_DORMANT[] = {CAP_SYS_ADMIN, CAP_NET_ADMIN};
#define DORMANT_COUNT ((int)(sizeof CAPABILITIES_DORMANT / sizeof CAPABILITIES_DORMANT[0]))

/* Adds `value` to `wanted` (permitted, and effective when `effective`)
 * where the process has it now: never ask for more. */
static bool keep_capability(cap_t now, cap_t wanted, cap_value_t value, bool effective)
{
	cap_flag_value_t permitted = CAP_CLEAR;
	cap_get_flag(now, value, CAP_PERMITTED, &permitted);
	if (permitted != CAP_SET)
		return true;
	return cap_set_flag(wanted, CAP_PERMITTED, 1, &value, CAP_SET) == 0 &&
	       (!effective || cap_set_flag(wanted, CAP_EFFECTIVE, 1, &value, CAP_SET) == 0);
}

bool capabilities_drop(char *error, size_t size)
{
	cap_t now = cap_get_proc();
	cap_t wanted = cap_init();
	bool ok = now && wanted;
	for (int i = 0; ok && i < KEPT_COUNT; i++)
		ok = keep_capability(now, wanted, CAPABILITIES_KEPT[i], true);
	for (int i = 0; ok && i < DORMANT_COUNT; i++)
		ok = keep_capability(now, wanted, CAPABILITIES_DORMANT[i], false);
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

bool capabilities_raise(cap_value_t value, bool on)
{
	cap_t caps = cap_get_proc();
	bool ok = caps &&
		  cap_set_flag(caps, CAP_EFFECTIVE, 1, &value, on ? CAP_SET : CAP_CLEAR) == 0 &&
		  cap_set_proc(caps) == 0;
	cap_free(caps);
	return ok;
}
