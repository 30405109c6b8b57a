/* redact-json.h: every string of a JSON tree through redact_text() (see
 * redact.h), for answers and events built as cJSON trees: whatever field a
 * route adds (a note, a cwd, a message, a name), what goes out is masked. */
#ifndef BOXD_REDACT_JSON_H
#define BOXD_REDACT_JSON_H

#include <cjson/cJSON.h>

/* Masks, in place, every string value and member name under `node`. */
void redact_json(cJSON *node);

#endif
