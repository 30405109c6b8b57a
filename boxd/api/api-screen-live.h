/* api-screen-live.h: GET /v1/screen/live (api-screen-live.c), routed from
 * api-screen.c's table. */
#ifndef BOXD_API_SCREEN_LIVE_H
#define BOXD_API_SCREEN_LIVE_H

struct api_request;

void api_screen_live(struct api_request *req);

#endif
