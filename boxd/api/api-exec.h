/* api-exec.h: what the routes of one command (api-exec.c, -input, -output,
 * -attach, api-procs.c's log) share. */
#ifndef BOXD_API_EXEC_H
#define BOXD_API_EXEC_H

struct api_request;
struct exec_job;

/* The command named by the path's first segment; NULL once a 404 naming
 * it has been answered. */
struct exec_job *api_exec_find(struct api_request *req);

#endif
