/* steps.h: the last 30 things boxd did, for `GET /v1/steps` and
 * sandbox_status. Summaries are one line, without output, masked. */
#ifndef BOXD_STEPS_H
#define BOXD_STEPS_H

#include <cjson/cJSON.h>

#define STEPS_KEPT 30

/* kind: exec, bg, stop, upload, shot, record, get, input, files (or lock). */
void steps_add(const char *kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* {"steps":[{"at","kind","summary"}...]}, oldest first. */
cJSON *steps_to_json(void);

#endif
