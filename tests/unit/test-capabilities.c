/* test-capabilities: capabilities_drop keeps the set boxd needs, and a root
 * exec afterwards (a shim, a command) gets every capability back. */
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capabilities.h"
#include "check.h"

/* In a child that dropped its capabilities: 0 when the drop kept CAP_KILL
 * and CAP_SYS_PTRACE (GET /v1/ports reads root processes' fd links), kept
 * CAP_SYS_ADMIN and CAP_NET_ADMIN permitted but not effective until raised
 * (an init's entropy, the kernel's process events) and lowered again, left
 * out one never kept (CAP_SYS_MODULE), and a root exec regains the whole
 * bounding set. */
static void dropped_child(void)
{
	char error[256];
	if (!capabilities_drop(error, sizeof error))
		_exit(10);
	cap_t caps = cap_get_proc();
	cap_flag_value_t admin = CAP_CLEAR, admin_effective = CAP_SET, kill_cap = CAP_CLEAR,
			 ptrace_cap = CAP_CLEAR, raised = CAP_CLEAR, lowered = CAP_SET;
	cap_get_flag(caps, CAP_SYS_ADMIN, CAP_PERMITTED, &admin);
	cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &admin_effective);
	cap_get_flag(caps, CAP_KILL, CAP_EFFECTIVE, &kill_cap);
	cap_get_flag(caps, CAP_SYS_PTRACE, CAP_EFFECTIVE, &ptrace_cap);
	cap_free(caps);
	if (admin != CAP_SET || admin_effective == CAP_SET || kill_cap != CAP_SET ||
	    ptrace_cap != CAP_SET)
		_exit(11);
	caps = capabilities_raise(CAP_SYS_ADMIN, true) ? cap_get_proc() : NULL;
	cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &raised);
	cap_free(caps);
	caps = capabilities_raise(CAP_SYS_ADMIN, false) ? cap_get_proc() : NULL;
	cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &lowered);
	cap_free(caps);
	if (raised != CAP_SET || lowered == CAP_SET || capabilities_raise(CAP_SYS_MODULE, true))
		_exit(13);
	cap_flag_value_t net_admin = CAP_CLEAR, net_admin_effective = CAP_SET;
	caps = cap_get_proc();
	cap_get_flag(caps, CAP_NET_ADMIN, CAP_PERMITTED, &net_admin);
	cap_get_flag(caps, CAP_NET_ADMIN, CAP_EFFECTIVE, &net_admin_effective);
	cap_free(caps);
	if (net_admin != CAP_SET || net_admin_effective == CAP_SET ||
	    !capabilities_raise(CAP_NET_ADMIN, true) || !capabilities_raise(CAP_NET_ADMIN, false))
		_exit(14);
	execl("/bin/sh", "sh", "-c",
	      "e=$(grep CapEff /proc/self/status | cut -f2); "
	      "b=$(grep CapBnd /proc/self/status | cut -f2); [ \"$e\" = \"$b\" ]",
	      (char *)NULL);
	_exit(12);
}

int main(void)
{
	char text[256];
	capabilities_describe(text, sizeof text);
	printf("kept capabilities: %s\n", text);
	CHECKF(strstr(text, "cap_kill") && strstr(text, "cap_sys_ptrace") &&
		       !strstr(text, "cap_sys_admin"),
	       "described set: %s", text);
	if (geteuid() != 0) {
		printf("capability drop: skipped (not root)\n");
		return check_done("capabilities");
	}
	pid_t pid = fork();
	if (pid == 0)
		dropped_child();
	int status = 0;
	waitpid(pid, &status, 0);
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "capability drop: status %d", status);
	return check_done("capabilities");
}
