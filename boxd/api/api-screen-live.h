/* api-screen-live.h: GET /v1/screen/live (api-screen-live.c), routed from
 * api-screen.c's table. */
#ifndef BOXD_API_SCREEN_LIVE_H
#define BOXD_API_SCREEN_LIVE_H

#include <cjson/cJSON.h>

struct api_request;

void api_screen_live(struct api_request *req);
/* Answers a worker's error answer as the worker gave it (a status out of
 * 400..599 becomes 500), `fallback` when it gave no message (api-screen.c). */
void api_screen_reply_worker_error(struct api_request *req, const cJSON *answer,
				   const char *fallback);

#endif
