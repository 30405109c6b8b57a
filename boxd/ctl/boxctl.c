/* boxctl.c: the CLI's entry point and its table of subcommands. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* One line per area; each table ends with an all-zero entry. */
extern const struct ctl_command ctl_health_commands[];
extern const struct ctl_command ctl_freeze_commands[];
extern const struct ctl_command ctl_steps_commands[];
extern const struct ctl_command ctl_services_commands[];
extern const struct ctl_command ctl_ports_commands[];
extern const struct ctl_command ctl_exec_commands[];
extern const struct ctl_command ctl_terminal_commands[];
extern const struct ctl_command ctl_procs_commands[];
extern const struct ctl_command ctl_screen_commands[];
extern const struct ctl_command ctl_live_commands[];
extern const struct ctl_command ctl_clipboard_commands[];
extern const struct ctl_command ctl_windows_commands[];
extern const struct ctl_command ctl_secrets_commands[];
extern const struct ctl_command ctl_env_commands[];
extern const struct ctl_command ctl_credentials_commands[];
extern const struct ctl_command ctl_sync_commands[];
extern const struct ctl_command ctl_files_commands[];
extern const struct ctl_command ctl_changes_commands[];

/* In the order of the API's areas, as `boxctl --help` lists them. */
static const struct ctl_command *const command_tables[] = {
	ctl_health_commands,
	ctl_freeze_commands,
	ctl_exec_commands,
	ctl_terminal_commands,
	ctl_procs_commands,
	ctl_secrets_commands,
	ctl_env_commands,
	ctl_credentials_commands,
	ctl_screen_commands,
	ctl_live_commands,
	ctl_clipboard_commands,
	ctl_windows_commands,
	ctl_sync_commands,
	ctl_files_commands,
	ctl_steps_commands,
	ctl_services_commands,
	ctl_ports_commands,
	ctl_changes_commands,
	NULL,
};

#define DEFAULT_SOCKET "/run/boxd/boxd.sock"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: boxctl [--socket PATH] [--json] COMMAND [ARGS...]\n\n"
		"Talks to boxd over its unix socket: --socket, else $BOXD_SOCKET,\n"
		"else %s. --json (before or after the command) prints\n"
		"the API's JSON instead of text. Exit status: 0 success, 1 boxd answered\n"
		"with an error, 2 usage error; exec exits with the command's status.\n\n"
		"commands:\n",
		DEFAULT_SOCKET);
	for (const struct ctl_command *const *table = command_tables; *table; table++) {
		for (const struct ctl_command *command = *table; command->name; command++)
			fprintf(out, "%s\n", command->usage);
	}
}

static const struct ctl_command *find_command(const char *name)
{
	for (const struct ctl_command *const *table = command_tables; *table; table++) {
		for (const struct ctl_command *command = *table; command->name; command++) {
			if (strcmp(command->name, name) == 0)
				return command;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct ctl ctl = {.socket_path = getenv("BOXD_SOCKET")};
	static const struct option options[] = {
		{"socket", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int option;
	/* "+" stops at the first command word: its own flags are its own. */
	while ((option = getopt_long(argc, argv, "+s:jh", options, NULL)) != -1) {
		switch (option) {
		case 's': ctl.socket_path = optarg; break;
		case 'j': ctl.json = true; break;
		case 'h': usage(stdout); return CTL_OK;
		default: usage(stderr); return CTL_USAGE;
		}
	}
	if (!ctl.socket_path || !*ctl.socket_path)
		ctl.socket_path = DEFAULT_SOCKET;
	if (optind >= argc) {
		usage(stderr);
		return CTL_USAGE;
	}
	const struct ctl_command *command = find_command(argv[optind]);
	if (!command) {
		fprintf(stderr, "boxctl: unknown command `%s` (see boxctl --help)\n", argv[optind]);
		return CTL_USAGE;
	}
	/* Subcommands see their own argv; --json may also follow the command. */
	int sub_argc = argc - optind;
	char **sub_argv = argv + optind;
	for (int i = 1; i < sub_argc; i++) {
		if (strcmp(sub_argv[i], "--") == 0)
			break;
		if (strcmp(sub_argv[i], "--json") == 0) {
			ctl.json = true;
			memmove(&sub_argv[i], &sub_argv[i + 1],
				(size_t)(sub_argc - i) * sizeof *sub_argv);
			sub_argc--;
			i--;
		}
	}
	int status = command->run(&ctl, sub_argc, sub_argv);
	client_close(ctl.client);
	return status;
}
