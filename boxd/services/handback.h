/* handback.h: what a person did while they had the screen (API.md, "Lock";
 * docs/screen.md, "Taking over and handing back").
 *
 * When the screen is locked, boxd marks where things stood: the changes
 * journal's cursor, the commands it had started, the screen's look; and it
 * listens to what has no mark: the programs started by anyone
 * (proc-events.h) and the clipboard's owners. When it is handed back, the
 * answer compares: heldMs, whether the screen looks different, the window in
 * front, whether the clipboard changed, the files changed under the work dir
 * and the commands started meanwhile. */
#ifndef BOXD_HANDBACK_H
#define BOXD_HANDBACK_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config.h"

struct event_base;

void handback_init(struct event_base *base, const struct boxd_config *config);

/* The screen was locked now, or, `taken_back`, at boxd's start it is locked
 * since before: what happened before this start is unknown, and the answer
 * says so ("incomplete"). */
void handback_begin(bool taken_back);

/* The screen is being handed back (call it before the lock ends):
 * `done(arg, held_ms, changes)` runs once, later, with how long the lock was
 * held and the answer's "changes" object (the callee's to keep). False, and
 * `done` never runs, while another hand-back's answer is on its way: one
 * answer per lock, to the call that asked first. */
typedef void (*handback_done_fn)(void *arg, int64_t held_ms, cJSON *changes);
bool handback_end(handback_done_fn done, void *arg);

#endif
