#include "api.h"

#include <stddef.h>

/* One line per area; each table ends with an all-zero entry. */
extern const struct api_route api_health_routes[];
extern const struct api_route api_steps_routes[];
extern const struct api_route api_lock_routes[];
extern const struct api_route api_exec_routes[];
extern const struct api_route api_exec_input_routes[];
extern const struct api_route api_exec_attach_routes[];
extern const struct api_route api_exec_output_routes[];
extern const struct api_route api_procs_routes[];
extern const struct api_route api_screen_routes[];
extern const struct api_route api_screen_windows_routes[];
extern const struct api_route api_secrets_routes[];
extern const struct api_route api_sync_routes[];
extern const struct api_route api_uploads_routes[];
extern const struct api_route api_files_routes[];
extern const struct api_route api_files_ops_routes[];
extern const struct api_route api_files_changes_routes[];
extern const struct api_route api_init_routes[];
extern const struct api_route api_services_routes[];
extern const struct api_route api_ports_routes[];
extern const struct api_route api_freeze_routes[];
extern const struct api_route api_clipboard_routes[];
extern const struct api_route api_credentials_routes[];

const struct api_route *const api_route_tables[] = {
	api_health_routes,
	api_steps_routes,
	api_lock_routes,
	api_exec_routes,
	api_exec_input_routes,
	api_exec_attach_routes,
	api_exec_output_routes,
	api_procs_routes,
	api_screen_routes,
	api_secrets_routes,
	api_sync_routes,
	api_uploads_routes,
	api_files_routes,
	api_files_ops_routes,
	api_files_changes_routes,
	api_init_routes,
	api_services_routes,
	api_ports_routes,
	api_freeze_routes,
	api_screen_windows_routes,
	api_clipboard_routes,
	api_credentials_routes,
	NULL,
};

static const struct boxd_config *settings;

void api_init(const struct boxd_config *config)
{
	settings = config;
}

const struct boxd_config *api_config(void)
{
	return settings;
}
